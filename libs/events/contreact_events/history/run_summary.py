"""One run at a glance, computed from its state in one place, in one shape.

``RunListing`` is what a listing shows of a run: the orchestrator keeps it in the run's
Redis listing hash (``listing_fields``, written only when it changes) and
``contreact runs --json`` prints it. ``RunSummary`` is the listing plus the figures that
move every step (tokens, calls, events); the dashboard's run rows are a ``RunSummary``
plus what only the dashboard keeps (``contreact_ui.models.RunRow``). So the CLI's JSON
and the dashboard's JSON of one run carry the same fields under the same names with the
same values (a test holds them together). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.core.state import AgentState

LISTING_STRINGS = (
    "run_id",
    "status",
    "model",
    "resolved_model",
    "backend",
    "host",
    "experiment",
    "waiting_task",
    "failure_reason",
)
LISTING_NUMBERS = ("cycle", "cycle_count")
OLD_HASH_NAMES = {"ran_model": "resolved_model"}
"""Hash fields written under another name by older code (read, never written)."""


class RunListing(BaseModel):
    """What a listing shows of one run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    status: str
    """new, checking, running, paused or stepping (``contreact pause``: a running run
    at rest, ``AgentState.listed_status``), waiting_operator, completed, failed,
    cancelled, stopped (its budget reached: ``failure_reason`` says which);
    quarantined (set aside by the orchestrator) or unreadable (its log cannot be read)."""
    model: str
    """The configured model (empty before the run's config is folded)."""
    resolved_model: str
    """The model that answered (differs from ``model`` when ``auto`` fell back)."""
    backend: str
    """The backend that ran once the model check resolved it, else the configured one."""
    host: str
    """The host that answered the run's last call (of its model's pool), or empty."""
    experiment: str
    cycle: int
    """The cycle in progress, or the last one."""
    cycle_count: int
    """Cycles configured."""
    waiting_task: str
    """The question the agent waits on the operator for (its task id), or empty."""
    failure_reason: str

    def listing_fields(self) -> dict[str, str]:
        """The Redis listing hash's fields (strings)."""
        fields = {name: getattr(self, name) for name in LISTING_STRINGS}
        return fields | {name: str(getattr(self, name)) for name in LISTING_NUMBERS}

    @classmethod
    def from_hash(cls, fields: Mapping[str, str]) -> RunListing:
        """The listing a Redis hash holds. Tolerant as a reader of a projection must be:
        a field missing (a hash from older code, a run registered but not yet decided)
        reads as empty or 0, a number that is not one as 0."""
        given = dict(fields)
        for old, name in OLD_HASH_NAMES.items():
            if old in given:
                given.setdefault(name, given.pop(old))
        values: dict[str, object] = {name: given.get(name, "") for name in LISTING_STRINGS}
        for name in LISTING_NUMBERS:
            text = given.get(name, "")
            values[name] = int(text) if text.isdigit() else 0
        return cls.model_validate(values)


class RunSummary(RunListing):
    """The listing, and the figures that move every step."""

    phase: str
    """Where the state machine is (``AgentState.phase``)."""
    step: int
    """LLM calls in the current cycle."""
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    llm_seconds: float
    events: int
    """Events folded (the state's ``seq``)."""
    cost: float
    """What the run's own LLM calls cost (``config.spend.COST_UNIT``), those of known
    cost; a lower bound when ``uncosted_calls`` > 0."""
    uncosted_calls: int
    """The run's own LLM calls whose cost is unknown (no provider figure, no price)."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def listing(self) -> RunListing:
        return RunListing.model_validate(
            {name: getattr(self, name) for name in RunListing.model_fields}
        )


def listing_fields(state: AgentState) -> dict[str, str]:
    """``run_summary(state).listing_fields()``, without the summary's sums over every
    cycle's metrics: the orchestrator compares it after every step to write the listing
    hash only on change, and the sums made that O(cycles) per step (issue 20).
    ``tests/unit/test_run_summary.py`` checks the two agree on every state of a run."""
    config = state.config
    waiting = state.waiting_for
    return {
        "run_id": state.run_id,
        "status": state.listed_status,
        "model": config.model_name if config else "",
        "resolved_model": state.resolved_model,
        "backend": state.backend or (config.backend if config else ""),
        "host": state.host,
        "experiment": (config.experiment or "") if config else "",
        "waiting_task": waiting.task_id if waiting else "",
        "failure_reason": ending_reason(state),
        "cycle": str(state.cycle_number),
        "cycle_count": str(config.cycle_count if config else 0),
    }


def run_metrics(state: AgentState) -> tuple[CycleMetrics, ...]:
    """The metrics of every cycle so far, the one in progress included."""
    if len(state.cycle_metrics) < state.cycle_number:  # a cycle has not ended yet
        return (*state.cycle_metrics, state.metrics)
    return state.cycle_metrics


def run_summary(state: AgentState) -> RunSummary:
    config = state.config
    waiting = state.waiting_for
    metrics = run_metrics(state)
    return RunSummary(
        run_id=state.run_id,
        status=state.listed_status,
        phase=state.phase,
        model=config.model_name if config else "",
        resolved_model=state.resolved_model,
        backend=state.backend or (config.backend if config else ""),
        host=state.host,
        experiment=(config.experiment or "") if config else "",
        cycle=state.cycle_number,
        cycle_count=config.cycle_count if config else 0,
        step=state.step,
        llm_calls=state.llm_calls,
        prompt_tokens=sum(m.prompt_tokens for m in metrics),
        completion_tokens=sum(m.completion_tokens for m in metrics),
        llm_seconds=sum(m.llm_seconds for m in metrics),
        events=state.seq,
        cost=state.spent_cost,
        uncosted_calls=state.uncosted_calls,
        waiting_task=waiting.task_id if waiting else "",
        failure_reason=ending_reason(state),
    )


def ending_reason(state: AgentState) -> str:
    """Why the run failed, or which budget stopped it (``stopped: budget``)."""
    if state.stop_reason is not None:
        return f"stopped: {state.stop_reason}"
    return state.failure_reason or ""
