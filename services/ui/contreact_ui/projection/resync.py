"""When what the follower read is no longer the log: the checks that tell, and the
whole log read again.

A Redis primary that dies takes with it the writes its replicas had not received yet,
and the replica promoted in its place holds a prefix of its logs
(docs/how-to/redis-sentinel.md); a Redis restarted from an older snapshot does the
same. The dashboard reads without waiting for replicas, so it may have projected entries
that the new primary never got, and the orchestrator writes the run on from the prefix:
new events in their place, under new stream ids (or, from a primary whose clock is
behind, the same ids). Following by stream id, the follower would then fold those events
on top of the lost ones.

Two checks tell (``LogFollower.poll``), both cheap:

- **Another server.** Every poll asks, in the same pipeline as its reads, for the
  server's ``run_id`` (``INFO server``: one per process, so a promoted replica, or a
  restarted server, answers another). When it changes, and after a round that failed
  (or at start, for the positions a previous process stored), each followed run's
  last-read entry is read back (``XRANGE key id id``, one pipeline for all runs): a run
  whose entry is gone, or holds another event, is projected again. Runs that ended here
  less than ``RECHECK_S`` ago are checked too: their end may have been lost.
- **A fold that fails** past the first page of a run: the run is projected again from
  its whole log once. A log that really does not fold fails again, from its start, and
  is reported as before (``projection_error``); then it is no longer followed, so it is
  never read again in a loop.

Projecting again reads the whole log, folds it from the start and puts it in place of
every row of the run in one transaction (``ProjectionStore.replace_run``): the same rows
a rebuild from the log makes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.replies import Entry as RawEntry
from contreact_bus.replies import entries
from contreact_events.names import run_log_key
from contreact_events.wire.codec import EVENT_FIELD

RECHECK_S = 60.0
"""How long after a run ended here its last entry is still checked on another server:
far longer than a replica lags (milliseconds), and than a failover takes."""

PAGE = 1000


async def read_log(redis: aioredis.Redis, run_id: str) -> list[RawEntry]:
    """The run's whole log as Redis holds it now (stream ids and fields), in pages."""
    key = run_log_key(run_id)
    found: list[RawEntry] = []
    start: bytes | str = "-"
    while True:
        page = entries(await redis.xrange(key, min=start, max="+", count=PAGE))
        found.extend(page)
        if len(page) < PAGE:
            return found
        start = b"(" + page[-1][0]


async def moved(
    redis: aioredis.Redis, positions: Mapping[str, tuple[str, bytes | None]]
) -> dict[str, str]:
    """The runs whose last-read entry (run id -> its stream id and stored JSON, None:
    not known) is no longer in their log as it was read, each with why."""
    ids = list(positions)
    if not ids:
        return {}
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            entry_id = positions[run_id][0]
            pipe.xrange(run_log_key(run_id), min=entry_id, max=entry_id)
        replies = await pipe.execute()
    out = {}
    for run_id, reply in zip(ids, replies, strict=True):
        entry_id, raw = positions[run_id]
        page = entries(reply)
        if not page:
            out[run_id] = f"its entry {entry_id}, projected, is no longer in its log"
        elif raw is not None and page[0][1].get(EVENT_FIELD.encode()) != raw:
            out[run_id] = f"its entry {entry_id} holds another event than the one projected"
    return out


def server_id(reply: Any) -> str | None:
    """The ``run_id`` of an ``INFO server`` reply (None: refused, e.g. by an ACL)."""
    if isinstance(reply, dict):
        found = reply.get("run_id")
        return str(found) if found is not None else None
    return None
