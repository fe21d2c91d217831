"""A run's queries (``contreact query``) on the Redis side: asked through the LLM
worker as an assessment job asks (``assessments.calls``: a gate and a reply list under
the query's own id), recorded beside the run, never in its log.

- The record (``catalog.query.RunQueried``) is appended to the run's query stream,
  ``run:{RUN}:queries``, once per query (a new event id each), and to the append-only
  archive ``DATA/runs/RUN.queries.jsonl`` (looked up by event id under an exclusive
  lock, flushed and fsynced), the copy that outlives Redis.
- ``read_queries`` is the one reader of the CLI and the dashboard: the archive's
  records, then those only Redis holds yet, each once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson
import redis.asyncio as aioredis
from pydantic import ValidationError

from contreact_bus.assessments.store import stream_records
from contreact_bus.replies import text
from contreact_events.catalog import upcast
from contreact_events.catalog.query import (
    QUERY_ADAPTER,
    QUERY_SCHEMA_VERSIONS,
    QUERY_UPCASTERS,
    QueryEvent,
)
from contreact_events.exceptions import CorruptEvent
from contreact_events.names import run_queries_key
from contreact_events.wire.codec import EVENT_FIELD, TYPE_FIELD

ARCHIVE_SUFFIX = ".queries.jsonl"


def to_json(event: QueryEvent) -> bytes:
    return event.__pydantic_serializer__.to_json(event)


def from_json(raw: str | bytes, *, where: str = "") -> QueryEvent:
    """Decode one stored query record (its own versions and upcasters)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CorruptEvent(f"{where or 'query'}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptEvent(f"{where or 'query'}: expected a JSON object")
    data = upcast(data, QUERY_UPCASTERS, QUERY_SCHEMA_VERSIONS)
    try:
        return QUERY_ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CorruptEvent(f"{where or 'query'}: {first['loc']}: {first['msg']}") from None


async def record(redis: aioredis.Redis, event: QueryEvent) -> str:
    """Append ``event`` to its run's query stream; its entry id."""
    fields = {TYPE_FIELD: event.type, EVENT_FIELD: to_json(event)}
    return text(await redis.xadd(run_queries_key(event.run_id), fields))  # type: ignore[arg-type]


async def redis_records(redis: aioredis.Redis, run_ids: Sequence[str]) -> list[list[QueryEvent]]:
    """Each run's records in its Redis stream, in order (one pipelined round trip)."""
    return await stream_records(redis, [run_queries_key(r) for r in run_ids], from_json)


def archive_path(archive_dir: Path, run_id: str) -> Path:
    return archive_dir / f"{run_id}{ARCHIVE_SUFFIX}"


def read_archive(archive_dir: Path, run_id: str) -> list[QueryEvent]:
    """The run's archived query records in the order they were appended (none: empty)."""
    path = archive_path(archive_dir, run_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return [
        from_json(line, where=f"{path}:{number}")
        for number, line in enumerate(raw.splitlines(), start=1)
        if line.strip()
    ]


def append_archive(archive_dir: Path, run_id: str, events: Iterable[QueryEvent]) -> int:
    """Append to the run's query archive each record it lacks (by event id), under an
    exclusive lock, then flush and fsync. Never rewrites a line. Returns lines added."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_path(archive_dir, run_id)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd), "rb") as current:
            held = {_event_id(line) for line in current if line.strip()}
        lines = b""
        for event in events:
            if event.event_id not in held:
                held.add(event.event_id)
                lines += to_json(event) + b"\n"
        if lines:
            os.write(fd, lines)
            os.fsync(fd)
        return lines.count(b"\n")
    finally:
        os.close(fd)


def _event_id(line: bytes) -> str:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return ""
    return str(data.get("event_id", "")) if isinstance(data, dict) else ""


async def read_queries(
    redis: aioredis.Redis | None, archive_dir: Path, run_ids: Sequence[str]
) -> dict[str, list[QueryEvent]]:
    """Every query record of each run: the archive's, then those only Redis holds yet
    (each once, by event id). ``redis`` None: the archive alone."""
    live = await redis_records(redis, run_ids) if redis is not None else [[] for _ in run_ids]
    out: dict[str, list[QueryEvent]] = {}
    for run_id, in_redis in zip(run_ids, live, strict=True):
        records = read_archive(archive_dir, run_id)
        seen = {event.event_id for event in records}
        records += [event for event in in_redis if event.event_id not in seen]
        out[run_id] = records
    return out
