"""Cognition events (seed 002, issue 17): the analysis of an operator exchange.

An exchange (the agent's ``send_message_to_operator`` and the operator's reply) is
complete when the reply is given back to the model. With ``cognition.analysis`` on,
``OperatorMessageAnalysisRequested`` records it right before that ``ToolCallCompleted``.
With ``heuristic`` the core derives ``OperatorMessageAnalyzed`` at once; with ``model``
the request opens a task that does not hold the cycle: its answer is accepted
whenever it arrives (the run's next cycles go on meanwhile) and ``RunCompleted`` waits
until none is open. A model answer that is not an analysis, or a task that keeps
failing, ends with the heuristic's analysis and the reason beside it.

With ``cognition.memory_policy`` on (seed 002's persistent memory), the exchange's
analysis holds the cycle, and an exchange scoring above the threshold is stored under
the reserved key prefix before the reply goes back to the model:
``PersistentMemoryRequested`` (the key and the value, decided by the core) opens a
memory task, ``PersistentMemoryStored`` is the memory service's answer.

With ``cognition.memory_block`` on, each cycle starts with a retrieval of the run's
memories relevant to its last reflection (``MemoriesRetrievalRequested``, a task for
the embedder; ``MemoriesRetrieved``, its answer, holding every key, value and score
the block shows), so the system prompt is built from the log alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contreact_events.catalog.chat import LLMUsage
from contreact_events.catalog.envelope import EventBase, InputEvent
from contreact_events.catalog.exchange import Analysis, Exchange


class LoggedAnalysis(Analysis):
    """An ``Analysis`` as the log holds it: checked when it was made (a model's answer
    strictly, by ``parse_model_analysis``), read back from JSON and inbox data (lists
    for tuples) without strict mode."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class OperatorMessageAnalysisRequested(EventBase):
    """An exchange is complete and will be analysed (``analyser``: how)."""

    type: Literal["OperatorMessageAnalysisRequested"] = "OperatorMessageAnalysisRequested"
    task_id: str
    """The analysis' own id (``{tool task}/analysis``): the task, when the model analyses."""
    exchange_task_id: str
    """The operator tool call whose message and reply the exchange is."""
    cycle: int
    exchange: Exchange
    recent: tuple[Exchange, ...] = ()
    """The earlier exchanges its context type is judged against (newest last)."""
    analyser: Literal["heuristic", "model"]


class OperatorMessageAnalyzed(InputEvent):
    """An exchange's analysis: a worker's answer to the analysis task (input), or
    decided by the core (the heuristic, asked for or standing in for a task that kept
    failing). ``causation_id`` of an answer is its task."""

    type: Literal["OperatorMessageAnalyzed"] = "OperatorMessageAnalyzed"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``usage`` (a version 1 answer of a worker reads as a call of unknown cost)."""
    task_id: str
    analysis: LoggedAnalysis
    fallback_reason: str | None = None
    """Why the heuristic stands in for the model (its answer rejected, no answer), or
    None (the analyser that was asked for answered)."""
    usage: LLMUsage | None = None
    """The analysis call's tokens and cost when a model answered (its answer rejected
    or not): the provider's cost, else the run's price for ``cognition.model``, else
    unknown (``cost`` None, never zero). None: no model answered (the core's
    heuristic, or the worker's standing in for a call that failed). Counted in the
    run's spend and against its ``budget`` (docs/interop-and-spend.md)."""


class PersistentMemoryRequested(EventBase):
    """The memory policy keeps an exchange: its conversation unit is to be stored under
    ``key`` (under ``cognition.policy.PERSISTENT_PREFIX``) by the memory service, a
    memory task the cycle waits on. Derived right after the exchange's analysis, when its
    persistence score is above the run's threshold."""

    type: Literal["PersistentMemoryRequested"] = "PersistentMemoryRequested"
    task_id: str
    """The memory task's id (``{tool task}/persist``)."""
    exchange_task_id: str
    """The operator tool call whose exchange is kept."""
    cycle: int
    key: str
    value: str
    """The conversation unit as stored (JSON: the agent's message, the operator's reply,
    the analysis' intent, summary and score, the cycle, the reply's time)."""
    persistence_score: float
    threshold: float
    """The run's ``cognition.persistence_threshold`` the score was above."""


class PersistentMemoryStored(InputEvent):
    """The memory service's answer to a ``PersistentMemoryRequested`` task (input):
    ``output`` and ``ok`` as the store gave them, so a memory rebuild can compare."""

    type: Literal["PersistentMemoryStored"] = "PersistentMemoryStored"
    task_id: str
    key: str
    output: str
    ok: bool


class MemoriesRetrievalRequested(EventBase):
    """Before ``cycle`` starts, the run's memories are ranked against ``query`` (the
    last reflection) for the "relevant memories" block (``cognition.memory_block``): a
    task for the embedder, which the cycle waits on."""

    type: Literal["MemoriesRetrievalRequested"] = "MemoriesRetrievalRequested"
    task_id: str
    """``{run}/c{cycle}/memories``."""
    cycle: int
    query: str
    k: int


class RetrievedMemory(BaseModel):
    """One memory as the block shows it, with each score of the hybrid retrieval
    (``cognition.retrieval.rank``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: str
    """The value, cut to ``MEMORY_BLOCK_PREVIEW`` characters (the block shows this)."""
    written_at: datetime
    combined: float
    cosine: float | None
    keyword: float
    recency: float


MEMORY_BLOCK_PREVIEW = 300
"""Characters of a value a retrieval logs and the block shows."""


class MemoriesRetrieved(InputEvent):
    """The embedder's answer to a ``MemoriesRetrievalRequested`` task (input), or the
    core's when the task kept failing (``error`` says why; the cycle has no block)."""

    type: Literal["MemoriesRetrieved"] = "MemoriesRetrieved"
    task_id: str
    cycle: int
    memories: tuple[RetrievedMemory, ...] = Field(default=(), max_length=10)
    """Best first."""
    error: str | None = None
