"""The run log: ``run:{id}``, append-only, one writer (the orchestrator), enforced by
the log itself: every append names the writer's fencing token and the length it
believes the log has, and a script on the run's own keys refuses it otherwise. A
finished run's log leaves Redis after its retention; the archive file keeps it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import ResponseError

from contreact_bus.exceptions import FencedOut, LogMoved
from contreact_bus.replies import Entry, entries, stream_entries
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.names import run_log_key, run_meta_key, run_writer_key
from contreact_events.wire.codec import bulk, event_from_fields, event_from_stored, event_to_fields

PAGE = 1000

APPEND_SCRIPT = """
local fence = tonumber(ARGV[1])
if fence >= 0 then
  local held = tonumber(redis.call('HGET', KEYS[2], 'fence') or '0')
  if fence < held then
    return redis.error_reply('FENCED the log ' .. KEYS[1] .. ' is written by token ' .. held)
  end
  if fence > held then redis.call('HSET', KEYS[2], 'fence', fence) end
end
local expected = tonumber(ARGV[2])
local length = redis.call('XLEN', KEYS[1])
if expected >= 0 and length ~= expected then
  return redis.error_reply('POSITION the log ' .. KEYS[1] .. ' holds ' .. length .. ' events')
end
local i = 3
if ARGV[i] == '1' then
  redis.call('HSET', KEYS[2], 'task', ARGV[i + 1], 'digest', ARGV[i + 2])
end
i = i + 3
local meta = tonumber(ARGV[i])
if meta > 0 then redis.call('HSET', KEYS[3], unpack(ARGV, i + 1, i + 2 * meta)) end
i = i + 1 + 2 * meta
local width = tonumber(ARGV[i])
for j = i + 1, #ARGV, width do
  redis.call('XADD', KEYS[1], '*', unpack(ARGV, j, j + width - 1))
end
return length + (#ARGV - i) / width
"""
"""The one write of a decision, on the run's own keys (one hash tag, so one Cluster
slot; the names come from the caller): refuse a writer whose fencing token is lower
than the highest that wrote this log (FENCED), or whose idea of the log's length is
wrong (POSITION); else record the task the events call for (workers check tasks
against it), update the listing hash, and XADD each event. A script runs whole: all
of it or, refused, none of it. Returns the log's new length."""

CLAIM_SCRIPT = """
local held = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
local fence = tonumber(ARGV[1])
if fence < held then return 0 end
redis.call('HSET', KEYS[1], 'fence', fence)
if ARGV[2] == '1' and not redis.call('HGET', KEYS[1], 'task') then
  redis.call('HSET', KEYS[1], 'task', ARGV[3], 'digest', ARGV[4])
end
return 1
"""
"""A new owner's claim on a run: raise the fence to its token (from now on a stale
writer is refused even before the new one writes), and record the pending task of a
log written before tasks were recorded. 0: a higher token holds the run already."""

UNCHECKED = -1
"""Fence or expected length that is not checked (tools and tests; never the
orchestrator)."""


@dataclass(frozen=True)
class PendingTask:
    """The task a run waits on, as the writer hash records it ("" for none)."""

    task_id: str
    digest: str


class RunLog:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis

    async def append(
        self,
        run_id: str,
        events: Sequence[Event],
        *,
        fence: int = UNCHECKED,
        expected: int = UNCHECKED,
    ) -> int:
        """Append ``events`` atomically on the run's one key: all or nothing. Raises
        ``FencedOut`` or ``LogMoved`` when the checks refuse it."""
        async with self._redis.pipeline(transaction=False) as pipe:
            self.queue_append(pipe, run_id, events, fence=fence, expected=expected)
            (result,) = await pipe.execute(raise_on_error=False)
        return append_result(result)

    @staticmethod
    def queue_append(
        pipe: Pipeline,
        run_id: str,
        events: Sequence[Event],
        *,
        fence: int = UNCHECKED,
        expected: int = UNCHECKED,
        pending: PendingTask | None = None,
        meta: Mapping[str, str] | None = None,
    ) -> None:
        """Add the checked, atomic append of ``events`` to a caller's pipeline. Redis
        runs a pipeline's commands in order, so what the caller queues after it (the
        tasks the events call for) happens after the append (and happens even if the
        append is refused: workers check a task against the recorded one)."""
        args: list[bytes | str | int] = [fence, expected]
        if pending is None:
            args += ["0", "", ""]
        else:
            args += ["1", pending.task_id, pending.digest]
        meta_items = list((meta or {}).items())
        args.append(len(meta_items))
        for name, text in meta_items:
            args += [name, text]
        width = 0
        fields_args: list[bytes | str] = []
        for event in events:
            fields = event_to_fields(event)
            width = 2 * len(fields)
            for field, value in fields.items():
                fields_args += [field, value]
        args.append(width or 1)
        pipe.eval(
            APPEND_SCRIPT,
            3,
            run_log_key(run_id),
            run_writer_key(run_id),
            run_meta_key(run_id),
            *args,
            *fields_args,
        )

    async def claim(self, run_id: str, fence: int, pending: PendingTask | None) -> bool:
        """Raise the run's fence to ``fence`` (a new owner of its shard); False if a
        higher token holds it."""
        args: list[str | int] = [fence]
        args += ["1", pending.task_id, pending.digest] if pending else ["0", "", ""]
        return bool(await self._redis.eval(CLAIM_SCRIPT, 1, run_writer_key(run_id), *args))

    async def pending_task(self, run_id: str) -> PendingTask | None:
        """The task the run's log last asked for (None if nothing was recorded)."""
        task, digest = await self._redis.hmget(run_writer_key(run_id), ["task", "digest"])
        if task is None:
            return None
        return PendingTask(_b(task).decode(), _b(digest or b"").decode())

    async def read(
        self, run_id: str, *, after: bytes | str = b"-", limit: int | None = None
    ) -> list[tuple[bytes, Event]]:
        """Entries after ``after`` (exclusive unless ``-``), in order, decoded."""
        key = run_log_key(run_id)
        # Decoded once every page is in: the raw entries are two small containers each,
        # while decoded events, kept alive across the reads, were rescanned by the cyclic
        # collector at every page (a quarter of a long read's time).
        return decode_entries(key, await self._fetch(key, after, limit))

    async def rebuild(self, run_id: str, state: AgentState | None = None) -> AgentState | None:
        """``fold_all`` of the run's whole log (onto ``state``; None: an empty log and no
        state). Each entry is decoded as the fold takes it, so every event but the
        state's parts is gone before the collector runs again: with ``read`` first, the
        collector scanned the whole decoded log once it ended (a fifth of a rebuild)."""
        key = run_log_key(run_id)
        fetched = await self._fetch(key, b"-", None)
        if not fetched:
            return state
        return fold_all(iter_entries(key, fetched), state)

    async def _fetch(self, key: str, after: bytes | str, limit: int | None) -> list[Entry]:
        fetched: list[Entry] = []
        start: bytes | str = after if after in (b"-", "-") else b"(" + _b(after)
        while True:
            count = PAGE if limit is None else min(PAGE, limit - len(fetched))
            if count <= 0:
                break
            page = entries(await self._redis.xrange(key, min=start, max="+", count=count))
            fetched.extend(page)
            if len(page) < count:
                break
            start = b"(" + page[-1][0]
        return fetched

    async def events(self, run_id: str) -> list[Event]:
        return [event for _, event in await self.read(run_id)]

    async def entry_at(self, run_id: str, position: int) -> Event | None:
        """The event at ``position`` (0-based) of the run's log, None past its end; only
        that one is decoded (a fork's ``RunForked`` stands after its copied prefix)."""
        key = run_log_key(run_id)
        fetched = await self._fetch(key, b"-", position + 1)
        if len(fetched) <= position:
            return None
        return decode_entries(key, fetched[position:])[0][1]

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
        return decode_entries(key, stream_entries(reply))


def decode_entries(key: str, page: list[Entry]) -> list[tuple[bytes, Event]]:
    """A page of ``key``'s entries as (entry id, event), in order."""
    out: list[tuple[bytes, Event]] = []
    add = out.append
    with bulk():
        for entry_id, fields in page:
            event = event_from_stored(fields)
            if event is None:  # the careful way: upcast, or name what is wrong and where
                event = event_from_fields(fields, where=f"{key} entry {entry_id.decode()}")
            add((entry_id, event))
    return out


def iter_entries(key: str, page: list[Entry]) -> Iterator[Event]:
    """``decode_entries``' events one at a time, for a consumer that drops each."""
    for entry_id, fields in page:
        event = event_from_stored(fields)
        if event is None:
            event = event_from_fields(fields, where=f"{key} entry {entry_id.decode()}")
        yield event


def append_result(result: Any) -> int:
    """The log's new length from the append script's reply, or the named refusal."""
    if isinstance(result, ResponseError):
        text = str(result)
        if text.startswith("FENCED"):
            raise FencedOut(text.removeprefix("FENCED ") + ": a newer owner took over")
        if text.startswith("POSITION"):
            raise LogMoved(text.removeprefix("POSITION ") + ", not what this writer holds")
        raise result
    if isinstance(result, BaseException):
        raise result
    return int(result)


def _b(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
