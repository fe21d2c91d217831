"""Rebuild the memory store from the run logs, and compare it with the live one.

The store is a projection of the logged tool calls: replaying, in log order, every
memory call the memory service executed (``contreact_events.history.memory_calls``: the
core's rule, the same decision the orchestrator made when it sent the task; calls it
answered itself, such as an unknown tool, unreadable or invalid arguments or a value
over ``limits.memory_value_chars``, never reached the service) through
``MemoryStore.apply`` (the same code path as the live service) gives the same rows,
``updated_at`` included, since it comes from the request's time.

A live store can hold an effect the log lacks: a call the memory service applied
whose result the orchestrator then ignored (the run was cancelled in between).
``RebuildReport.differences`` shows such rows.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.runs import load_events
from contreact_events.catalog import Event
from contreact_events.history.memory_calls import memory_calls
from contreact_memory.exceptions import RebuildTargetExists
from contreact_memory.store import MemoryRow, MemoryStore

SHOWN = 80
"""Characters of a value shown in a difference."""


def replay(store: MemoryStore, events: Sequence[Event]) -> list[str]:
    """Apply a run's executed memory calls to ``store``; return where a replayed
    result differs from the logged one (empty when every result matches)."""
    mismatches = []
    for call in memory_calls(events):
        task, logged = call.task, call.result
        outcome = store.apply(task)
        if (outcome.output, outcome.ok) != (logged.output, logged.ok):
            mismatches.append(
                f"{task.task_id} ({task.tool}): logged ok={logged.ok} "
                f"{_short(logged.output)!r}, replayed ok={outcome.ok} {_short(outcome.output)!r}"
            )
    return mismatches


def rebuild_store(events_by_run: Iterable[Sequence[Event]], target_path: Path | str) -> MemoryStore:
    """A new store at ``target_path`` (which must not exist) holding the replay of
    each run's log. The caller closes it."""
    store = _fresh(Path(target_path))
    for events in events_by_run:
        replay(store, events)
    return store


def differences(live: Sequence[MemoryRow], rebuilt: Sequence[MemoryRow]) -> list[str]:
    """Rows that differ between two dumps, described for a person."""
    by_key = {(r[0], r[1]): r for r in live}
    new_by_key = {(r[0], r[1]): r for r in rebuilt}
    out = []
    for run_key in sorted(by_key.keys() | new_by_key.keys()):
        old, new = by_key.get(run_key), new_by_key.get(run_key)
        where = f"run {run_key[0]} key {run_key[1]!r}"
        if new is None:
            out.append(f"{where}: only in the live store")
        elif old is None:
            out.append(f"{where}: only in the rebuilt store")
        elif old != new:
            out.append(
                f"{where}: live {_short(old[2])!r} at {old[3]}, "
                f"rebuilt {_short(new[2])!r} at {new[3]}"
            )
    return out


@dataclass(frozen=True)
class RebuildReport:
    run_ids: tuple[str, ...]
    entries: int
    """Rows in the rebuilt store."""
    differences: tuple[str, ...]
    """Rows where the rebuilt store differs from the live one."""
    output_mismatches: tuple[str, ...]
    """Replayed results that differ from the logged ``ToolCallCompleted`` outputs."""
    rebuilt_path: Path | None
    """Where the rebuilt store was kept (None: a temporary file, deleted)."""

    @property
    def identical(self) -> bool:
        """The rebuilt store holds exactly the live store's rows of these runs."""
        return not self.differences


async def rebuild_runs(
    redis: aioredis.Redis | None,
    archive_dir: Path,
    run_ids: Sequence[str],
    live_path: Path,
    target_path: Path | None = None,
) -> RebuildReport:
    """Load each run's log (Redis, else the archive), rebuild the memory of those runs
    into ``target_path`` (a temporary file when None) and compare it with the live
    store at ``live_path``. Raises ``RunNotFound`` for an unknown run."""
    logs = [await load_events(redis, archive_dir, run_id) for run_id in run_ids]
    return await asyncio.to_thread(
        _rebuild_and_compare, logs, tuple(run_ids), live_path, target_path
    )


def _rebuild_and_compare(
    logs: list[list[Event]], run_ids: tuple[str, ...], live_path: Path, target: Path | None
) -> RebuildReport:
    with tempfile.TemporaryDirectory(prefix="contreact-memory-") as scratch:
        live = MemoryStore.open(live_path, create=False)
        try:
            rebuilt = _fresh(target if target is not None else Path(scratch) / "memory.db")
        except BaseException:
            live.close()
            raise
        try:
            mismatches = [m for events in logs for m in replay(rebuilt, events)]
            new_rows = [row for run_id in run_ids for row in rebuilt.dump(run_id)]
            live_rows = [row for run_id in run_ids for row in live.dump(run_id)]
        finally:
            rebuilt.close()
            live.close()
    return RebuildReport(
        run_ids=run_ids,
        entries=len(new_rows),
        differences=tuple(differences(live_rows, new_rows)),
        output_mismatches=tuple(mismatches),
        rebuilt_path=target,
    )


def _fresh(path: Path) -> MemoryStore:
    if path.exists():
        raise RebuildTargetExists(f"{path} exists; rebuild into a new file")
    return MemoryStore.open(path)


def _short(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} chars)"
