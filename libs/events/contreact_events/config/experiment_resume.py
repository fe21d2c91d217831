"""Resubmitting an experiment file: what happens to each replica given the experiment's
record and the status of each recorded run (``contreact experiment run`` again, after a
cancel, a failure or a crash). A replica done is left alone, a running one too; a
failed or cancelled one runs again under its next attempt's id; a configuration that
changed for replicas already run is refused, so that an experiment's runs stay
comparable.

The record (``experiment:{NAME}:replicas``) holds each replica's current attempt: run
id, attempt number and the SHA-256 of its config without the run id. ``resend`` (the
request left no trace: the orchestrator has not taken it yet) sends the same request
again, harmless since a second request for a run is ignored. A run id is never reused
(a run log is never rewritten, and a failed attempt's log is kept for the record), so
retries get new, predictable ids, and ``status`` and ``export`` follow the current
one. Submission is one pipeline: every ``RunRequested`` on its inbox shard and every
record.
"""

from __future__ import annotations

from dataclasses import dataclass

from contreact_events.config import RunConfig
from contreact_events.config.experiment import PlannedRun
from contreact_events.exceptions import ConfigError

ACTIVE_STATUSES = frozenset(
    {"new", "checking", "running", "waiting_operator", "paused", "stepping"}
)
"""A run's listed statuses before it ends (``paused`` and ``stepping``: a running run at
rest, ``core.state.RESTING_STATUSES``; config does not import core)."""
DONE_STATUS = "completed"
ENDED_FOR_GOOD = frozenset({DONE_STATUS, "stopped"})
"""A replica whose run completed, or was stopped by its budget (running it again would
spend it again), is not run again by resubmitting the file."""


@dataclass(frozen=True)
class Recorded:
    """What an experiment's record holds for a replica: its current attempt."""

    run_id: str
    attempt: int
    config_sha256: str


@dataclass(frozen=True)
class Submission:
    """What resubmitting does for one replica.

    ``submit``: first attempt. ``retry``: the last attempt failed or was cancelled,
    a new one runs under the next id. ``resend``: the last request left no trace
    (the orchestrator has not taken it yet): it is sent again under the same id,
    which is harmless (a second request for a run is ignored). ``done`` and
    ``running``: nothing is sent."""

    planned: PlannedRun
    action: str
    attempt: int
    config: RunConfig
    status: str | None = None
    """The status of the attempt before (for retry/done/running)."""

    @property
    def sends(self) -> bool:
        return self.action in ("submit", "retry", "resend")


def resume(
    planned: list[PlannedRun],
    records: dict[str, Recorded],
    statuses: dict[str, str | None],
    *,
    source: str = "experiment",
) -> list[Submission]:
    """What to do for each replica, given the record and the status of each recorded
    run (None: no trace of it). A replica whose configuration changed since it was
    recorded is refused: an experiment's runs must be comparable."""
    changed = [
        p.replica
        for p in planned
        if p.replica in records and records[p.replica].config_sha256 != p.config_sha256
    ]
    planned_names = {p.replica for p in planned}
    gone = sorted(name for name in records if name not in planned_names)
    if gone and any(p.condition is not None for p in planned):
        raise ConfigError(
            f"{source}: the conditions changed for replicas already run ({', '.join(gone[:5])}"
            f"{' ...' if len(gone) > 5 else ''} are no longer in the file): restore the "
            "conditions, or give the experiment a new name"
        )
    conditioned = {p.replica for p in planned if p.condition is not None}
    changed_conditions = [name for name in changed if name in conditioned]
    if changed_conditions:
        raise ConfigError(
            f"{source}: the conditions changed for replicas already run: "
            f"{', '.join(changed_conditions[:5])}{' ...' if len(changed_conditions) > 5 else ''} "
            "would run with other settings than their recorded runs: restore the file, or "
            "give the experiment a new name"
        )
    if changed:
        raise ConfigError(
            f"{source}: the configuration of {', '.join(changed)} differs from when this "
            "experiment was submitted: restore the file, or give the experiment a new name"
        )
    out = []
    for run in planned:
        record = records.get(run.replica)
        if record is None:
            out.append(Submission(run, "submit", 1, run.config))
            continue
        status = statuses.get(record.run_id)
        if status in ENDED_FOR_GOOD:
            action, attempt = "done", record.attempt
        elif status in ACTIVE_STATUSES:
            action, attempt = "running", record.attempt
        elif status is None:
            action, attempt = "resend", record.attempt
        else:  # failed, cancelled, quarantined
            action, attempt = "retry", record.attempt + 1
        out.append(Submission(run, action, attempt, run.attempt(attempt), status))
    return out
