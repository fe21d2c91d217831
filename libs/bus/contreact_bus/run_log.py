"""The run log: ``run:{id}``, append-only, never trimmed, one writer (the orchestrator)."""

from __future__ import annotations

from collections.abc import Sequence

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.replies import Entry, entries, stream_entries
from contreact_events.catalog import Event
from contreact_events.codec import bulk, event_from_fields, event_to_fields
from contreact_events.names import run_log_key

PAGE = 1000

APPEND_SCRIPT = """
local width = tonumber(ARGV[1])
local ids = {}
for i = 2, #ARGV, width do
  ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i, i + width - 1))
end
return ids
"""
"""XADD each entry (``width`` field/value items apiece) to the one key, atomically:
a script runs whole, and touching one key it is valid on Redis Cluster. Names come
from the caller (the codec), never from the script."""


class RunLog:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis

    async def append(self, run_id: str, events: Sequence[Event]) -> list[bytes]:
        """Append ``events`` atomically on the run's one key: all or nothing."""
        async with self._redis.pipeline(transaction=False) as pipe:
            self.queue_append(pipe, run_id, events)
            (ids,) = await pipe.execute()
        return list(ids)

    @staticmethod
    def queue_append(pipe: Pipeline, run_id: str, events: Sequence[Event]) -> None:
        """Add the atomic append of ``events`` to a caller's pipeline. Redis runs a
        pipeline's commands in order, so what the caller queues after it (the tasks
        the events call for) happens after the append."""
        args: list[bytes | str] = []
        width = 0
        for event in events:
            fields = event_to_fields(event)
            width = 2 * len(fields)
            for name, value in fields.items():
                args += [name, value]
        pipe.eval(APPEND_SCRIPT, 1, run_log_key(run_id), width, *args)

    async def read(
        self, run_id: str, *, after: bytes | str = b"-", limit: int | None = None
    ) -> list[tuple[bytes, Event]]:
        """Entries after ``after`` (exclusive unless ``-``), in order, decoded."""
        key = run_log_key(run_id)
        out: list[tuple[bytes, Event]] = []
        start: bytes | str = after if after in (b"-", "-") else b"(" + _b(after)
        while True:
            count = PAGE if limit is None else min(PAGE, limit - len(out))
            if count <= 0:
                break
            page = entries(await self._redis.xrange(key, min=start, max="+", count=count))
            out.extend(_decoded(key, page))
            if len(page) < count:
                break
            start = b"(" + page[-1][0]
        return out

    async def events(self, run_id: str) -> list[Event]:
        return [event for _, event in await self.read(run_id)]

    async def exists(self, run_id: str) -> bool:
        return bool(await self._redis.exists(run_log_key(run_id)))

    async def length(self, run_id: str) -> int:
        return int(await self._redis.xlen(run_log_key(run_id)))

    async def last_id(self, run_id: str) -> bytes:
        """Id of the newest entry (``0-0`` for an empty log): follow from here."""
        newest = entries(await self._redis.xrevrange(run_log_key(run_id), count=1))
        return newest[0][0] if newest else b"0-0"

    async def follow(
        self, run_id: str, last_id: bytes | str, *, block_ms: int = 1000
    ) -> list[tuple[bytes, Event]]:
        """Block until entries newer than ``last_id`` arrive (or the timeout passes)."""
        key = run_log_key(run_id)
        reply = await self._redis.xread({key: last_id}, block=block_ms, count=PAGE)
        return _decoded(key, stream_entries(reply))


def _decoded(key: str, page: list[Entry]) -> list[tuple[bytes, Event]]:
    with bulk():
        return [
            (entry_id, event_from_fields(fields, where=f"{key} entry {entry_id.decode()}"))
            for entry_id, fields in page
        ]


def _b(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
