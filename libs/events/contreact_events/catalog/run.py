"""Run lifecycle events."""

from __future__ import annotations

from typing import Literal

from contreact_events.catalog.envelope import EventBase, InputEvent
from contreact_events.config import ResolvedBackend, RunConfig


class RunRequested(InputEvent):
    """A run was submitted (input, from the CLI). Starts the model check."""

    type: Literal["RunRequested"] = "RunRequested"
    schema_version: Literal[5] = 5  # type: ignore[assignment]  # a raised version
    """2: the config has ``diversity`` (version 1 runs ran without it). 3: the config
    has ``limits`` and ``final_call_at_step_cap`` (version 2 runs ran without them).
    4: ``limits.cut_arguments_in_history`` (version 3 runs sent arguments back whole).
    5: ``cognition.heuristic_rules`` (version 4 runs ran with rules 1)."""
    config: RunConfig
    """The configuration as submitted (backend may still be ``auto``)."""
    requested_by: str = "cli"
    stepping: bool = False
    """``contreact run --step``: the run rests before its first model call and at every
    one after, until ``contreact step`` lets one more happen. Part of the request, so
    no answer can come between the request and the rest (runs before this field paused
    by a ``RunPaused`` sent after the request, and under load their first call could
    be requested first)."""
    orchestrator_version: str = ""
    """The code that decided the run: ``VERSION+g{commit}`` (``.dirty`` when the
    working tree had uncommitted changes), or the package version alone outside a
    git checkout."""


class ModelChecked(InputEvent):
    """The LLM worker checked the backend and model (input, answers the preflight task)."""

    type: Literal["ModelChecked"] = "ModelChecked"
    ok: bool
    backend: ResolvedBackend | None = None
    model: str = ""
    model_digest: str | None = None
    detail: str = ""
    """Why this backend was chosen, or what is wrong and how to fix it."""


class RunStarted(EventBase):
    """The run's effective setup, fixed for its whole life."""

    type: Literal["RunStarted"] = "RunStarted"
    schema_version: Literal[5] = 5  # type: ignore[assignment]  # a raised version
    """2: the config has ``diversity`` (version 1 runs ran without it). 3: the config
    has ``limits`` and ``final_call_at_step_cap``; ``prompt_hashes`` is recorded.
    4: ``limits.cut_arguments_in_history`` (version 3 runs sent arguments back whole).
    5: ``cognition.heuristic_rules`` (version 4 runs ran with rules 1)."""
    config: RunConfig
    """Effective configuration: backend resolved, system prompt text included."""
    backend: ResolvedBackend
    model: str
    model_digest: str | None = None
    """The digest Ollama reports for the model (``sha256:...`` of the GGUF file for the
    embedded backend); None for the scripted backend."""
    seed: int | None = None
    system_prompt: str
    """The full system prompt, tools paragraph included, before any advisory."""
    system_prompt_sha256: str
    tools: tuple[dict[str, object], ...]
    """Tool definitions offered to the model, as sent."""
    code_version: str = ""
    """``RunRequested.orchestrator_version``: package version, commit, dirty flag."""
    prompt_hashes: dict[str, str] = {}
    """SHA-256 of every text the platform puts into prompts (the system prompt as
    given, the tools paragraph, the cycle opening, the advisories, the regeneration
    request, the final-call note): a changed text shows without reading the code."""


class RunCompleted(EventBase):
    type: Literal["RunCompleted"] = "RunCompleted"
    cycles: int


class RunFailed(EventBase):
    type: Literal["RunFailed"] = "RunFailed"
    reason: str


class RunStopped(EventBase):
    """The run reached its ``budget`` before an LLM call: it ends here, with everything
    up to the call that reached it logged (status ``stopped``)."""

    type: Literal["RunStopped"] = "RunStopped"
    reason: Literal["budget"] = "budget"
    detail: str
    """Which limit was reached and by how much, in words."""
    cycle: int
    """The cycle the run was in (its reflection may be missing)."""


class RunCancelled(InputEvent):
    """Input from the CLI; accepted while the run is active."""

    type: Literal["RunCancelled"] = "RunCancelled"
    reason: str = "cancelled by the operator"
