"""Decoded snapshots of the fold's state, kept for the replay page (one cache per app,
``app.state.snapshots``).

The replay page folds at most five cycles of stored events from the nearest snapshot
and keeps the last four snapshots it decoded, keyed by the store's generation, the run
and the position (a snapshot is written once; a rebuild makes a new generation). A
1,000-cycle run's snapshot is 7 MB of JSON, most of a cold replay's time.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict

from contreact_events.core.state import AgentState
from contreact_events.wire.codec import bulk
from contreact_ui.read_models import state_from_snapshot

SNAPSHOTS_KEPT = 4
"""Decoded snapshot states kept in memory (tens of MB each for a 1,000-cycle run)."""


class SnapshotCache:
    """The states of the snapshots replayed last, decoded (a 1,000-cycle run's is 7 MB
    of JSON: most of a replay's time), kept by the store's generation, run and log
    position: a snapshot is written once, and a rebuild makes a new generation. Stepping
    through a run folds from the same snapshot five cycles long. Thread-safe (the
    pages run in a thread pool); the states are frozen, so they are shared as they are."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._states: OrderedDict[tuple[str, str, int], AgentState] = OrderedDict()
        self._lock = threading.Lock()

    def nearest(self, conn: sqlite3.Connection, run_id: str, at: int) -> AgentState:
        """The fold's state at the nearest snapshot at or before event ``at`` (the
        run's empty state when none)."""
        found = conn.execute(
            "SELECT seq FROM snapshots WHERE run_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            (run_id, at),
        ).fetchone()
        if found is None:
            return AgentState(run_id=run_id)
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        key = (str(generation[0]) if generation else "", run_id, int(found[0]))
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                self._states.move_to_end(key)
                return state
        blob = conn.execute(
            "SELECT state FROM snapshots WHERE run_id = ? AND seq = ?", (run_id, key[2])
        ).fetchone()[0]
        with bulk():  # tens of thousands of objects, no cycles: the collector would rescan
            state = state_from_snapshot(bytes(blob))  # the whole heap several times over
        with self._lock:
            self._states[key] = state
            while len(self._states) > self.size:
                self._states.popitem(last=False)
        return state

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
