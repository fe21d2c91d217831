"""Rebuild every projection from the logs (``contreact-ui --rebuild``).

The new store is built in a separate file, then copied over the live one with
SQLite's online backup, so the pages never see half a rebuild; it carries a new
generation, which tells a running follower to reload from it. Runs come from Redis
(``runs:index`` and each run's log) and from the archive folder; a run Redis still
holds is read there (its stream ids let the follower follow it on).

Each run is projected as soon as it is read (an archive's lines decoded as the projector
takes them), and only its rows wait for their batch's write: holding the decoded events
of many runs had the cyclic garbage collector scan them again and again. The texts are
left out of the trigram index while they are written, and the index is made in one
statement once every row is in (``ProjectionStore.reindex_texts``); the follower
indexes each text in the transaction that writes it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.archive import archive_path, archived_run_ids
from contreact_bus.replies import texts
from contreact_bus.run_log import RunLog
from contreact_events.config import RUN_ID_PATTERN
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import RUNS_INDEX
from contreact_events.wire.codec import bulk, event_from_json
from contreact_ui.exceptions import ProjectionError, ProjectionVersionMismatch
from contreact_ui.projection.store import ProjectionStore, connect
from contreact_ui.read_models import Delta, Entry, RunProjector


@dataclass
class RebuildReport:
    runs: int = 0
    events: int = 0
    problems: dict[str, str] = field(default_factory=dict)


BATCH_EVENTS = 20_000
"""Events whose rows are written per write transaction of a rebuild."""


@dataclass
class _Batch:
    """Runs projected and not written yet: their deltas, and the problems to record
    once their rows are in."""

    deltas: list[tuple[Delta, str]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    events: int = 0


async def rebuild(path: Path, redis: aioredis.Redis | None, archive_dir: Path) -> RebuildReport:
    """Project every run into a fresh store and put it in place of ``path``.

    Each run is projected as soon as it is read, so only its rows wait for the batch's
    write; runs read from their archives are projected a batch at a time, up to its
    write, in one synchronous block with the cyclic garbage collector paused (``bulk``:
    what they make holds no reference cycles, and the collector's scans of the batch
    waiting to be written were a twentieth of the rebuild); the trigram index of the
    search texts is made once, after the last write."""
    scratch = path.with_name(path.name + ".rebuild")
    for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
        leftover.unlink(missing_ok=True)
    store = ProjectionStore.open(scratch)
    # A scratch file, installed only once complete: a crash (or any error, which ends
    # here too) means the next rebuild starts it again, so it needs neither the WAL's
    # second copy of every page nor a sync (no rollback either: nothing rolls back).
    store.conn.execute("PRAGMA journal_mode = OFF")
    store.conn.execute("PRAGMA synchronous = OFF")
    report = RebuildReport()
    try:
        ids: set[str] = set(archived_run_ids(archive_dir))
        if redis is not None:
            ids.update(texts(await redis.zrange(RUNS_INDEX, 0, -1)))
        batch = _Batch()
        archived: list[str] = []  # archive runs waiting for their thread, in order
        for run_id in sorted(i for i in ids if RUN_ID_PATTERN.match(i)):
            problem: str | None = None
            try:
                entries = await _redis_entries(redis, run_id)
            except ContReActEventError as exc:  # a log that does not decode
                entries, problem = None, str(exc)
                report.problems[run_id] = problem
            if entries is None and problem is None:
                archived.append(run_id)
                continue
            await _from_archives(store, archive_dir, archived, batch, report)
            if problem is not None:  # after the runs before it: written in order
                store.set_problem(run_id, status=None, error=problem)
            elif entries is not None:
                await asyncio.to_thread(_project_run, run_id, entries, "redis", batch, report)
                del entries
                if batch.events >= BATCH_EVENTS:
                    await asyncio.to_thread(_write_batch, store, batch)
        await _from_archives(store, archive_dir, archived, batch, report)
        await asyncio.to_thread(_write_batch, store, batch)
        await asyncio.to_thread(store.reindex_texts)
        await asyncio.to_thread(_install, store.conn, path)
    finally:
        store.close()
        for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
            leftover.unlink(missing_ok=True)
    return report


async def _redis_entries(redis: aioredis.Redis | None, run_id: str) -> list[Entry] | None:
    """The run's log from Redis while it holds it (its stream ids let the follower
    follow it on); None when it does not: then the archive is read, if any. A run
    registered with nothing appended yet is left to the follower."""
    if redis is None:
        return None
    read = await RunLog(redis).read(run_id)
    if not read:
        return None
    return [Entry(entry_id.decode(), event, None) for entry_id, event in read]


async def _from_archives(
    store: ProjectionStore,
    archive_dir: Path,
    run_ids: list[str],
    batch: _Batch,
    report: RebuildReport,
) -> None:
    """Project the runs waiting for their archive (and empty the list), a batch per
    call in a worker thread."""
    while run_ids:
        done = await asyncio.to_thread(
            _project_archives, store, archive_dir, run_ids, batch, report
        )
        del run_ids[:done]


def _project_archives(
    store: ProjectionStore,
    archive_dir: Path,
    run_ids: list[str],
    batch: _Batch,
    report: RebuildReport,
) -> int:
    """Project runs from their archives, each line decoded as the projector takes it,
    until the batch fills up and is written (or the runs run out); the collector paused
    throughout (no other coroutine's work runs in this thread), so it never meets a
    batch waiting to be written. Returns how many runs were taken."""
    done = 0
    with bulk():
        for run_id in run_ids:
            done += 1
            path = archive_path(archive_dir, run_id)
            if not path.exists():
                continue
            try:
                _project_archive(path, run_id, batch, report)
            except ContReActEventError as exc:  # a line that does not decode
                report.problems[run_id] = str(exc)
                store.set_problem(run_id, status=None, error=str(exc))
                continue
            if batch.events >= BATCH_EVENTS:
                _write_batch(store, batch)  # its rows freed before the collector is back
                break
    return done


def _project_archive(path: Path, run_id: str, batch: _Batch, report: RebuildReport) -> None:
    with path.open("rb") as lines, bulk():
        _project_run(run_id, _entries(lines, path), "archive", batch, report)


def archive_entries(archive_dir: Path, run_id: str) -> list[Entry] | None:
    """A run's archive file as entries that keep each event's stored JSON (the payload
    the event log serves), or None when there is no archive."""
    path = archive_path(archive_dir, run_id)
    if not path.exists():
        return None
    with path.open("rb") as lines, bulk():
        return list(_entries(lines, path))


def _entries(lines: Iterable[bytes], path: Path) -> Iterator[Entry]:
    where = f"{path}:"
    for number, line in enumerate(lines, start=1):
        raw = line.rstrip(b"\r\n")
        if raw[:1] == b"{" or raw.strip():  # a blank line is skipped
            yield Entry(None, event_from_json(raw, where=f"{where}{number}"), raw)


def _project_run(
    run_id: str, entries: Iterable[Entry], source: str, batch: _Batch, report: RebuildReport
) -> None:
    """Project one run into the batch (what comes before a bad event, and the problem)."""
    try:
        delta = RunProjector(run_id).feed(entries)
    except ProjectionError as exc:
        batch.problems[run_id] = report.problems[run_id] = str(exc)
        if exc.partial is not None:
            batch.deltas.append((exc.partial, source))
        return
    if delta.empty:
        return  # an empty archive: nothing to show
    batch.deltas.append((delta, source))
    report.runs += 1
    report.events += len(delta.events)
    batch.events += len(delta.events)


def _write_batch(store: ProjectionStore, batch: _Batch) -> None:
    """Write the batch's runs in one transaction, their texts left out of the trigram
    index (made once at the end), then the problems of those that stopped short; the
    batch is emptied (in place: its holders see the next one)."""
    store.apply_many(batch.deltas, index=False)
    for run_id, problem in batch.problems.items():
        store.set_problem(run_id, status=None, error=problem)
    batch.deltas.clear()
    batch.problems.clear()
    batch.events = 0


def _install(built: sqlite3.Connection, path: Path) -> None:
    live = connect(path)
    try:
        built.backup(live)
    finally:
        live.close()


async def open_or_rebuild(
    path: Path, redis: aioredis.Redis | None, archive_dir: Path
) -> ProjectionStore:
    """The store at ``path``; rebuilt first when it holds another projection version."""
    try:
        return ProjectionStore.open(path)
    except ProjectionVersionMismatch:
        await rebuild(path, redis, archive_dir)
        return ProjectionStore.open(path)
