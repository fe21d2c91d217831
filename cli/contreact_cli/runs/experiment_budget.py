"""An experiment's runs started as its ``parallel`` limit and ``experiment_budget``
allow: the runs held back are started as others end, until the experiment's spend
reaches its budget; from then on none is started, and the command says so once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contreact_events.config.experiment import ExperimentConfig
from contreact_events.config.experiment_resume import ACTIVE_STATUSES, Submission
from contreact_events.config.spend import budget_reached

GOING = frozenset({*ACTIVE_STATUSES, "submitted"})


@dataclass
class HeldRuns:
    """The submissions not sent yet, and why the rest never will be (``stopped``)."""

    experiment: ExperimentConfig
    held: list[Submission] = field(default_factory=list)
    stopped: str | None = None
    """The budget line once the experiment's budget stopped starting runs."""

    @classmethod
    def split(
        cls, experiment: ExperimentConfig, plan: Sequence[Submission]
    ) -> tuple[list[Submission], HeldRuns]:
        """What to send now (within ``parallel``, counting the runs still going) and
        what to hold back."""
        sending = [s for s in plan if s.sends]
        limit = experiment.parallel
        if limit is None and experiment.experiment_budget is None:
            return sending, cls(experiment)
        going = sum(s.action == "running" for s in plan)
        room = len(sending) if limit is None else max(limit - going, 0)
        return sending[:room], cls(experiment, sending[room:])

    def reached(self, rows: Sequence[dict[str, Any]], now: float) -> str | None:
        """Which limit of the experiment's budget its runs' spend has reached, or None."""
        budget = self.experiment.experiment_budget
        if budget is None:
            return None
        requested = [row["requested_at"] for row in rows if row.get("requested_at")]
        return budget_reached(
            budget,
            tokens=sum(row["tokens"] for row in rows),
            cost=sum(row["cost"] for row in rows),
            elapsed_s=now - min(requested) if requested else None,
        )

    def release(self, rows: Sequence[dict[str, Any]], now: float) -> list[Submission]:
        """The held runs that may start now; none once the budget is reached (then
        ``stopped`` says why, and nothing is held any more)."""
        if not self.held:
            return []
        reached = self.reached(rows, now)
        if reached is not None:
            self.stopped = (
                f"experiment {self.experiment.experiment}: its budget is reached ({reached}): "
                f"{len(self.held)} run(s) not started: "
                + ", ".join(s.config.run_id for s in self.held)
            )
            self.held = []
            return []
        limit = self.experiment.parallel
        going = sum(row["status"] in GOING for row in rows)
        room = len(self.held) if limit is None else max(limit - going, 0)
        released, self.held = self.held[:room], self.held[room:]
        return released
