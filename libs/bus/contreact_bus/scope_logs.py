"""The runs of a paragraph corpus's scope and their events: from Redis, or, once a
finished run's log has left Redis (``log_retention_s`` after it ended), from its
archive file.

`contreact corpus stats` and the embedder's corpus index both read through here, so
they see the same corpus. Reading is incremental: a ``RunCursor`` remembers how far
its reader got, so a reader that keeps its cursors reads each event once. A run read
from its archive has ended (only an ended run is archived and only an archived run
leaves Redis): its cursor is then done and the run is never read again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.exceptions import RedisUnavailable, RunNotFound
from contreact_bus.replies import entries
from contreact_bus.run_log import PAGE, RunLog, decode_entries
from contreact_bus.runs import experiment_run_ids
from contreact_events.catalog import Event
from contreact_events.diversity.corpus import experiment_scope, run_scope
from contreact_events.names import run_log_key

RUN_PREFIX = run_scope("")
EXPERIMENT_PREFIX = experiment_scope("")


@dataclass
class RunCursor:
    """How far a reader got in one run's events."""

    run_id: str
    last_id: bytes = b"-"
    """Redis entry id of the last event read from the run log (``-``: none yet)."""
    position: int = 0
    """Events read so far, wherever from: where the archive takes over."""
    done: bool = False
    """The run was read whole from its archive: nothing more will come."""


async def scope_run_ids(redis: aioredis.Redis | None, scope: str) -> list[str]:
    """The runs whose paragraphs make the corpus ``scope``: ``run:ID`` is that run,
    ``experiment:NAME`` every run of the experiment (``experiment:{NAME}:runs``,
    which keeps the runs whose logs have left Redis)."""
    if scope.startswith(RUN_PREFIX):
        return [scope.removeprefix(RUN_PREFIX)]
    if not scope.startswith(EXPERIMENT_PREFIX):
        raise ValueError(f"corpus scope {scope!r} is neither run:ID nor experiment:NAME")
    if redis is None:
        raise RedisUnavailable(
            f"the runs of {scope} are listed in Redis, which does not answer: "
            "start it (`contreact up`) or name one run"
        )
    return await experiment_run_ids(redis, scope.removeprefix(EXPERIMENT_PREFIX))


async def read_since(
    redis: aioredis.Redis | None, archive_dir: Path, cursors: Sequence[RunCursor]
) -> list[list[Event]]:
    """Each cursor's run's events after the cursor, in log order, and the cursors
    moved past them. One pipelined round trip for every run still in Redis (more
    only for a run with more than a page of news); a run whose log has left Redis is
    read from its archive, once. A run with no log and no archive (requested, not
    started yet) has no events yet."""
    out: list[list[Event]] = [[] for _ in cursors]
    open_ = [i for i, cursor in enumerate(cursors) if not cursor.done]
    replies: list[Any] = []
    if redis is not None and open_:
        async with redis.pipeline(transaction=False) as pipe:
            for i in open_:
                key = run_log_key(cursors[i].run_id)
                pipe.xrange(key, min=_after(cursors[i].last_id), max="+", count=PAGE)
                pipe.exists(key)
            replies = await pipe.execute()
    moves: list[tuple[RunCursor, bytes, int, bool]] = []
    for n, i in enumerate(open_):
        cursor = cursors[i]
        page = entries(replies[2 * n]) if replies else []
        in_redis = bool(replies[2 * n + 1]) if replies else False
        if page:
            read = decode_entries(run_log_key(cursor.run_id), page)
            if len(page) == PAGE and redis is not None:
                read += await RunLog(redis).read(cursor.run_id, after=read[-1][0])
            out[i] = [event for _, event in read]
            moves.append((cursor, read[-1][0], cursor.position + len(read), False))
        elif not in_redis:
            archived = await asyncio.to_thread(read_archive, archive_dir, cursor.run_id)
            if archived is not None:
                out[i] = archived[cursor.position :]
                moves.append((cursor, cursor.last_id, len(archived), True))
    # Moved only once every run is read: an unreadable one (a corrupt event) raises
    # and leaves every cursor where it was, so no run's news is skipped.
    for cursor, last_id, position, done in moves:
        cursor.last_id, cursor.position, cursor.done = last_id, position, done
    return out


async def scope_events(
    redis: aioredis.Redis | None, archive_dir: Path, scope: str
) -> dict[str, list[Event]]:
    """Every event of every run of ``scope``, by run id (``redis`` None: the
    archive alone, for a run scope)."""
    cursors = [RunCursor(run_id) for run_id in await scope_run_ids(redis, scope)]
    events = await read_since(redis, archive_dir, cursors)
    if scope.startswith(RUN_PREFIX) and not events[0]:
        raise RunNotFound(
            f"no run '{cursors[0].run_id}' in Redis or in {archive_dir} "
            "(see `contreact runs` for the list)"
        )
    return {cursor.run_id: run_events for cursor, run_events in zip(cursors, events, strict=True)}


def _after(last_id: bytes) -> bytes:
    return last_id if last_id == b"-" else b"(" + last_id
