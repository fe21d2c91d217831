"""One run at a glance, computed from its state in one place.

The Redis listing (``contreact_bus.runs.meta_fields``), the CLI's tables and ``--json``
and the dashboard's run list all show the same few figures of a run; they take them
from ``run_summary(state)`` so they never disagree. Pure: no I/O, no clock.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.core.state import AgentState


class RunSummary(BaseModel):
    """What a listing shows of one run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    status: str
    """new, checking, running, waiting_operator, completed, failed, cancelled."""
    phase: str
    """Where the state machine is (``AgentState.phase``)."""
    model: str
    """The configured model (empty before the run's config is folded)."""
    resolved_model: str
    """The model that answered (differs from ``model`` when ``auto`` fell back)."""
    backend: str
    """The backend that ran once the model check resolved it, else the configured one."""
    experiment: str
    cycle: int
    """The cycle in progress, or the last one."""
    cycle_count: int
    """Cycles configured."""
    step: int
    """LLM calls in the current cycle."""
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    llm_seconds: float
    events: int
    """Events folded (the state's ``seq``)."""
    waiting_task: str
    """The question the agent waits on the operator for (its task id), or empty."""
    failure_reason: str

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def listing_fields(self) -> dict[str, str]:
        """The Redis listing hash's fields (strings). Only figures that change a few
        times per cycle, not every step, so the hash is written only on change."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "cycle": str(self.cycle),
            "cycle_count": str(self.cycle_count),
            "model": self.model,
            "backend": self.backend,
            "ran_model": self.resolved_model,
            "experiment": self.experiment,
            "waiting_task": self.waiting_task,
            "failure_reason": self.failure_reason,
        }


def listing_fields(state: AgentState) -> dict[str, str]:
    """``run_summary(state).listing_fields()``, without the summary's sums over every
    cycle's metrics: the orchestrator compares it after every step to write the listing
    hash only on change, and the sums made that O(cycles) per step (issue 20).
    ``tests/unit/test_run_summary.py`` checks the two agree on every state of a run."""
    config = state.config
    waiting = state.waiting_for
    return {
        "run_id": state.run_id,
        "status": state.status,
        "cycle": str(state.cycle_number),
        "cycle_count": str(config.cycle_count if config else 0),
        "model": config.model_name if config else "",
        "backend": state.backend or (config.backend if config else ""),
        "ran_model": state.resolved_model,
        "experiment": (config.experiment or "") if config else "",
        "waiting_task": waiting.task_id if waiting else "",
        "failure_reason": state.failure_reason or "",
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
        status=state.status,
        phase=state.phase,
        model=config.model_name if config else "",
        resolved_model=state.resolved_model,
        backend=state.backend or (config.backend if config else ""),
        experiment=(config.experiment or "") if config else "",
        cycle=state.cycle_number,
        cycle_count=config.cycle_count if config else 0,
        step=state.step,
        llm_calls=state.llm_calls,
        prompt_tokens=sum(m.prompt_tokens for m in metrics),
        completion_tokens=sum(m.completion_tokens for m in metrics),
        llm_seconds=sum(m.llm_seconds for m in metrics),
        events=state.seq,
        waiting_task=waiting.task_id if waiting else "",
        failure_reason=state.failure_reason or "",
    )
