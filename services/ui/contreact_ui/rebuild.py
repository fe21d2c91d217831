"""Rebuild every projection from the logs (``contreact-ui --rebuild``).

The new store is built in a separate file, then copied over the live one with
SQLite's online backup, so the pages never see half a rebuild; it carries a new
generation, which tells a running projector to reload from it. Runs come from Redis
(``runs:index`` and each run's log) and from the archive folder; a run Redis still
holds is read there (its stream ids let the projector follow it on).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.archive import archived_run_ids, read_archive
from contreact_bus.replies import texts
from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.config import RUN_ID_PATTERN
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import RUNS_INDEX
from contreact_ui.exceptions import ProjectionError, ProjectionVersionMismatch
from contreact_ui.projection import RunProjector
from contreact_ui.store import ProjectionStore, connect


@dataclass
class RebuildReport:
    runs: int = 0
    events: int = 0
    problems: dict[str, str] = field(default_factory=dict)


async def rebuild(path: Path, redis: aioredis.Redis | None, archive_dir: Path) -> RebuildReport:
    """Project every run into a fresh store and put it in place of ``path``."""
    scratch = path.with_name(path.name + ".rebuild")
    for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
        leftover.unlink(missing_ok=True)
    store = ProjectionStore.open(scratch)
    report = RebuildReport()
    try:
        ids: set[str] = set(archived_run_ids(archive_dir))
        if redis is not None:
            ids.update(texts(await redis.zrange(RUNS_INDEX, 0, -1)))
        for run_id in sorted(i for i in ids if RUN_ID_PATTERN.match(i)):
            try:
                pairs, source = await _log_of(redis, archive_dir, run_id)
                if not pairs:
                    continue  # registered, nothing appended yet: the projector follows it
                events = await asyncio.to_thread(_project_into, store, run_id, pairs, source)
            except (ProjectionError, ContReActEventError) as exc:
                report.problems[run_id] = str(exc)
                store.set_problem(run_id, status=None, error=str(exc))
                continue
            report.runs += 1
            report.events += events
        await asyncio.to_thread(_install, store.conn, path)
    finally:
        store.close()
        for leftover in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
            leftover.unlink(missing_ok=True)
    return report


async def _log_of(
    redis: aioredis.Redis | None, archive_dir: Path, run_id: str
) -> tuple[list[tuple[str | None, Event]], str]:
    if redis is not None:
        read = await RunLog(redis).read(run_id)
        if read:
            return [(entry_id.decode(), event) for entry_id, event in read], "redis"
    archived = await asyncio.to_thread(read_archive, archive_dir, run_id)
    return [(None, event) for event in archived or []], "archive"


def _project_into(
    store: ProjectionStore, run_id: str, pairs: list[tuple[str | None, Event]], source: str
) -> int:
    delta = RunProjector(run_id).feed(pairs)
    store.apply(delta, source=source)
    return len(pairs)


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
