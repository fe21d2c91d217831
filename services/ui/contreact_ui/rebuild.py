"""Rebuild every projection from the logs (``contreact-ui --rebuild``).

The new store is built in a separate file, then copied over the live one with
SQLite's online backup, so the pages never see half a rebuild; it carries a new
generation, which tells a running follower to reload from it. Runs come from Redis
(``runs:index`` and each run's log) and from the archive folder; a run Redis still
holds is read there (its stream ids let the follower follow it on).
"""

from __future__ import annotations

import asyncio
import sqlite3
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
from contreact_ui.read_models import Delta, Entry, RunProjector
from contreact_ui.store import ProjectionStore, connect


@dataclass
class RebuildReport:
    runs: int = 0
    events: int = 0
    problems: dict[str, str] = field(default_factory=dict)


BATCH_EVENTS = 20_000
"""Events projected per write transaction of a rebuild."""


async def rebuild(path: Path, redis: aioredis.Redis | None, archive_dir: Path) -> RebuildReport:
    """Project every run into a fresh store and put it in place of ``path``."""
    scratch = path.with_name(path.name + ".rebuild")
    for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
        leftover.unlink(missing_ok=True)
    store = ProjectionStore.open(scratch)
    store.conn.execute("PRAGMA synchronous = OFF")  # a scratch file: a crash means rebuild
    report = RebuildReport()
    try:
        ids: set[str] = set(archived_run_ids(archive_dir))
        if redis is not None:
            ids.update(texts(await redis.zrange(RUNS_INDEX, 0, -1)))
        batch: list[tuple[str, list[Entry], str]] = []
        pending = 0
        for run_id in sorted(i for i in ids if RUN_ID_PATTERN.match(i)):
            try:
                pairs, source = await _log_of(redis, archive_dir, run_id)
            except ContReActEventError as exc:
                report.problems[run_id] = str(exc)
                store.set_problem(run_id, status=None, error=str(exc))
                continue
            if not pairs:
                continue  # registered, nothing appended yet: the follower follows it
            batch.append((run_id, pairs, source))
            pending += len(pairs)
            if pending >= BATCH_EVENTS:
                await asyncio.to_thread(_project_batch, store, batch, report)
                batch, pending = [], 0
        await asyncio.to_thread(_project_batch, store, batch, report)
        await asyncio.to_thread(_install, store.conn, path)
    finally:
        store.close()
        for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
            leftover.unlink(missing_ok=True)
    return report


async def _log_of(
    redis: aioredis.Redis | None, archive_dir: Path, run_id: str
) -> tuple[list[Entry], str]:
    if redis is not None:
        read = await RunLog(redis).read(run_id)
        if read:
            return [Entry(entry_id.decode(), event, None) for entry_id, event in read], "redis"
    archived = await asyncio.to_thread(archive_entries, archive_dir, run_id)
    return archived or [], "archive"


def archive_entries(archive_dir: Path, run_id: str) -> list[Entry] | None:
    """A run's archive file as entries that keep each event's stored JSON (the payload
    the event log serves), or None when there is no archive."""
    path = archive_path(archive_dir, run_id)
    if not path.exists():
        return None
    out = []
    with path.open("rb") as lines, bulk():
        for number, line in enumerate(lines, start=1):
            raw = line.rstrip(b"\r\n")
            if raw.strip():
                out.append(Entry(None, event_from_json(raw, where=f"{path}:{number}"), raw))
    return out


def _project_batch(
    store: ProjectionStore,
    batch: list[tuple[str, list[Entry], str]],
    report: RebuildReport,
) -> None:
    """Project several runs and write them in one transaction."""
    deltas: list[tuple[Delta, str]] = []
    problems: dict[str, str] = {}
    for run_id, pairs, source in batch:
        try:
            deltas.append((RunProjector(run_id).feed(pairs), source))
        except ProjectionError as exc:
            problems[run_id] = str(exc)
            if exc.partial is not None:
                deltas.append((exc.partial, source))  # what comes before the bad event
            continue
        report.runs += 1
        report.events += len(pairs)
    store.apply_many(deltas)
    for run_id, problem in problems.items():
        store.set_problem(run_id, status=None, error=problem)
    report.problems.update(problems)


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
