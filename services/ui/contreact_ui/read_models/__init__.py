"""The dashboard's read models, projected from a run log. Pure: no I/O, no clock.

A ``RunProjector`` (``run_projector.py``) folds a run's events as they are appended
(the same ``fold`` the orchestrator uses) and turns each batch into a ``Delta``
(``rows.py``): the rows of the read models that changed. The store writes a delta in
one transaction together with how far the projector got in the log, so a batch is
never half applied nor applied twice.

Read models (tables of ``store.py``):

* run summary (status, model, backend, cycle/step, tokens, memory keys, ...);
* per-cycle metrics, tool calls by tool, the advisory each cycle received, its
  similarity assessment and its reflection;
* the similarity matrix (every pair the assessments compared);
* memory changes (key added, changed, deleted, with the cycle and log position), from
  which memory at the end of any cycle, or at any event, is read;
* operator exchanges and regeneration attempts;
* the events themselves, indexed by type, cycle and task, for the log viewer;
* a snapshot of the fold's state at the start of every fifth cycle, so that the replay
  page folds at most five cycles of events.

``PROJECTION_VERSION`` names the shape of all of these: the store rebuilds itself from
the logs when the version it holds differs. ``describe`` (``describe.py``) is the
one-line summary of an event the log viewer shows.
"""

from contreact_ui.read_models.describe import describe
from contreact_ui.read_models.rows import (
    PROJECTION_VERSION,
    Delta,
    Entry,
    EventRow,
    MemoryChange,
    Snapshot,
)
from contreact_ui.read_models.run_projector import (
    SNAPSHOT_EVERY,
    UNKNOWN_TOOL,
    RunProjector,
    similarities,
    snapshot_bytes,
    state_from_snapshot,
    task_key,
)

__all__ = [
    "PROJECTION_VERSION",
    "SNAPSHOT_EVERY",
    "UNKNOWN_TOOL",
    "Delta",
    "Entry",
    "EventRow",
    "MemoryChange",
    "RunProjector",
    "Snapshot",
    "describe",
    "similarities",
    "snapshot_bytes",
    "state_from_snapshot",
    "task_key",
]
