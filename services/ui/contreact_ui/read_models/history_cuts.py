"""Where a run's prompts left part of its history out, per cycle (``history: truncate``
or ``compact``), derived from the log while the projector folds it. Pure: no I/O.

A model call's prompt is the history cut by the run's policy
(``contreact_events.core.compaction.window``): the fold's state after ``LLMRequested``
has the history the call was built from, so the cut is read from it, not guessed from
the configuration."""

from __future__ import annotations

from contreact_events.catalog import Event
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.catalog.cycle import LLMRequested
from contreact_events.core.compaction import window
from contreact_events.core.state import AgentState
from contreact_ui.models import HistoryCut

CUT_TYPES = frozenset({"LLMRequested", "HistoryCompactionRequested"})
"""The events ``HistoryCuts.feed`` reads."""


class HistoryCuts:
    """The cuts of one run's cycles, kept up to date as its events are folded."""

    def __init__(self) -> None:
        self._rows: dict[int, HistoryCut] = {}
        self._compactions: dict[int, tuple[int, str]] = {}  # cycle -> (seq, model)

    def feed(self, event: Event, state: AgentState) -> HistoryCut | None:
        """The cycle's row changed by ``event`` (folded into ``state``), if one did."""
        if isinstance(event, HistoryCompactionRequested):
            self._compactions[event.cycle] = (state.seq, event.model)
            return None
        if not isinstance(event, LLMRequested):
            return None
        lead, start = window(state)
        if not start:
            return None
        row = self._rows.get(event.cycle)
        if row is None:
            compaction = self._compactions.get(event.cycle)
            row = self._rows[event.cycle] = HistoryCut(
                cycle=event.cycle,
                kind="summarised" if lead else "truncated",
                seq=state.seq,
                first_left_out=start,
                last_left_out=start,
                messages=len(state.message_history),
                calls=0,
                compaction_seq=compaction[0] if compaction else None,
                compaction_model=compaction[1] if compaction else None,
            )
        row.last_left_out = start
        row.messages = len(state.message_history)
        row.calls += 1
        return row
