"""Cycle and LLM events.

Each cycle opens with a user turn, ``cycle_start_message`` (default ``Cycle {n}
begins.``): without one the history would end on the previous reflection, an assistant
turn, which Ollama treats as a prefill to continue.

The step cap (``max_steps_per_cycle``): when the last allowed answer still calls tools,
``StepLimitReached`` records how many calls were dropped, and each gets a tool message
saying it was not executed (the transcript stays well formed). With
``final_call_at_step_cap`` (the default) the event has ``final_call=True``, those
messages say that tools are off, and the model is called once more with no tools: its
answer is the cycle's reflection (``complete=True``; the paragraph guard applies) and
``CycleEnded(ended_by="step_limit")``; a final answer that still calls tools ends the
cycle on its text. Without it (and in every run recorded before configuration version
3) the cycle ends on the cut answer, ``ReflectionRecorded(complete=False)``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.catalog.envelope import EventBase, InputEvent


class CycleMetrics(BaseModel):
    """Seed 003's CYCLE_END metrics plus tool calls, tokens and LLM time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ops_total: int = 0
    messages_to_operator: int = 0
    response_chars: int = 0
    """Characters of every assistant answer in the cycle, the reflection included."""
    memory_write_chars: int = 0
    reflection_chars: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    regenerations: int = 0
    """Answers asked for again by the paragraph repetition guard."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0


class CycleStarted(EventBase):
    type: Literal["CycleStarted"] = "CycleStarted"
    cycle: int
    advisory: str | None = None
    """Diversity advisory in force for this cycle (appended to its system prompt)."""


class LLMRequested(EventBase):
    """A completion was asked for. The prompt is not repeated: the fold rebuilds it."""

    type: Literal["LLMRequested"] = "LLMRequested"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``prompt_sha256`` (version 1 events read as None: not recorded)."""
    task_id: str
    cycle: int
    step: int
    call_index: int
    """How many LLM calls the run made before this one."""
    prompt_sha256: str | None = None
    """SHA-256 of the exact messages and tools the call sends (``prompt.prompt_sha256``),
    so a deterministic replay also catches a change in how prompts are assembled."""


class LLMResponded(InputEvent):
    """Input from the LLM worker; ``causation_id`` is the task it answers."""

    type: Literal["LLMResponded"] = "LLMResponded"
    schema_version: Literal[3] = 3  # type: ignore[assignment]  # a raised version
    """2: ``usage.cost`` and ``usage.cost_source`` (version 1 events read as unknown);
    3: ``host`` (version 2 events read as unknown)."""
    message: AssistantMessage
    usage: LLMUsage = LLMUsage()
    model: str = ""
    tool_call_error: str | None = None
    """Set when the backend could not parse the model's tool call and the raw text
    was kept as a plain answer."""
    host: str | None = None
    """The host that answered: one of the model's pool (``ollama_client_config.hosts``),
    the OpenAI-compatible base URL, ``embedded``; None in version 2 events (unknown)."""


class LLMFailed(InputEvent):
    """Input from the LLM worker after its retries ran out."""

    type: Literal["LLMFailed"] = "LLMFailed"
    error: str
    retryable: bool = False
    attempts: int = 1


class StepLimitReached(EventBase):
    """The cycle hit its cap on ReAct steps; its pending tool calls are not run."""

    type: Literal["StepLimitReached"] = "StepLimitReached"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``final_call`` (version 1 events read as False, which is how they ran)."""
    cycle: int
    steps: int
    dropped_tool_calls: int
    final_call: bool = False
    """The model is called once more, without tools, for the cycle's reflection
    (``final_call_at_step_cap``); False: the cycle ends on the cut answer."""


class ReflectionRecorded(EventBase):
    type: Literal["ReflectionRecorded"] = "ReflectionRecorded"
    cycle: int
    text: str
    complete: bool = True
    """False when the cycle ended on the step limit rather than on an answer."""


class CycleEnded(EventBase):
    type: Literal["CycleEnded"] = "CycleEnded"
    cycle: int
    ended_by: Literal["reflection", "step_limit"]
    metrics: CycleMetrics
