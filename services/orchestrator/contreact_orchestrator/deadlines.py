"""Waits past their deadline, reported as ``TaskFailed`` inputs.

Every task a run waits on has a deadline (``RunConfig.deadlines``). The orchestrator's
timer asks which held runs' waits are over; each is reported once through the run's
inbox shard (in order with its other inputs), and again after ``REFIRE_S`` if nothing
came of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from contreact_events.core.outbox import open_deadlines, waiting_deadline
from contreact_events.core.state import AgentState
from contreact_events.wire.answers import task_failed
from contreact_events.wire.tasks import InboxMessage

REFIRE_S = 60.0
"""An expiry reported but not yet acted on is reported again after this long."""


class DeadlineWatch:
    """Remembers which expiries it reported, so each is reported once per ``REFIRE_S``."""

    def __init__(self) -> None:
        self._reported: dict[tuple[str, str, int], datetime] = {}

    def overdue(self, states: Mapping[str, AgentState], now: datetime) -> list[InboxMessage]:
        """A ``TaskFailed`` input for each run in ``states`` whose wait is over."""
        failures = []
        live: set[tuple[str, str, int]] = set()
        for run_id, state in states.items():
            for open_id, sends, ends in open_deadlines(state):  # analyses, beside the cycle
                key = (run_id, open_id, sends)
                live.add(key)
                last = self._reported.get(key)
                if now < ends or (last is not None and (now - last).total_seconds() < REFIRE_S):
                    continue
                self._reported[key] = now
                reason = f"no answer within its deadline ({ends:%H:%M:%S} UTC)"
                failures.append(task_failed(run_id, open_id, "expired", reason, send=sends))
            waits = waiting_deadline(state)
            if waits is None:
                continue
            task_id, deadline = waits
            key = (run_id, task_id, state.task_sends)
            live.add(key)
            last = self._reported.get(key)
            if now < deadline or (last is not None and (now - last).total_seconds() < REFIRE_S):
                continue
            self._reported[key] = now
            waited = (now - (state.pending_since or now)).total_seconds()
            send = state.task_sends if state.pending_task_id is not None else None
            reason = f"no answer within its deadline ({waited:.0f} s since it was sent)"
            failures.append(task_failed(run_id, task_id, "expired", reason, send=send))
        for key in set(self._reported) - live:
            del self._reported[key]
        return failures
