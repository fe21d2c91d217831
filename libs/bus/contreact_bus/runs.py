"""Reading runs for the CLI and tools: the run log in Redis, else the archive; the
listing projection (``runs:index`` and each run's meta hash)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson
import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.replies import text_map, texts
from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.core.state import AgentState
from contreact_events.history.run_summary import RunListing, listing_fields
from contreact_events.names import (
    ACTIVE_RUNS,
    RUNS_INDEX,
    SERVICES_HEARTBEAT,
    experiment_runs_key,
    run_meta_key,
)


async def load_events(redis: aioredis.Redis | None, archive_dir: Path, run_id: str) -> list[Event]:
    """The run's events from Redis, or from its archive file when Redis lacks it."""
    if redis is not None:
        events = await RunLog(redis).events(run_id)
        if events:
            return events
    archived = await asyncio.to_thread(read_archive, archive_dir, run_id)
    if archived:
        return archived
    raise RunNotFound(
        f"no run '{run_id}' in Redis or in {archive_dir} (see `contreact runs` for the list)"
    )


def meta_fields(state: AgentState) -> dict[str, str]:
    """The listing projection of a state (strings, for a Redis hash): the slow-changing
    fields of its ``run_summary``, so the orchestrator writes it only on change."""
    return listing_fields(state)


async def register_run(redis: aioredis.Redis, run_id: str, experiment: str | None) -> None:
    """Index a new run (called once, before its first event is appended)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zadd(RUNS_INDEX, {run_id: time.time()}, nx=True)
        pipe.sadd(ACTIVE_RUNS, run_id)
        if experiment:
            pipe.sadd(experiment_runs_key(experiment), run_id)
        await pipe.execute()


async def experiment_run_ids(redis: aioredis.Redis, experiment: str) -> list[str]:
    return sorted(texts(await redis.smembers(experiment_runs_key(experiment))))


async def active_run_ids(redis: aioredis.Redis) -> list[str]:
    return sorted(texts(await redis.smembers(ACTIVE_RUNS)))


async def list_runs(redis: aioredis.Redis) -> list[RunListing]:
    """Every indexed run's listing, oldest first."""
    ids = texts(await redis.zrange(RUNS_INDEX, 0, -1))
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.hgetall(run_meta_key(run_id))
        metas = await pipe.execute()
    return [
        RunListing.from_hash({"run_id": run_id, **text_map(meta)})
        for run_id, meta in zip(ids, metas, strict=True)
    ]


STARTED_AT = time.time()
"""When this process started (a heartbeat says it, so a beat from before a restart is
told apart from one of the process running now)."""

START_SLACK_S = 5.0
"""A process notes its start a little after the supervisor started it."""
FORGET_HEARTBEAT_S = 600.0
"""A heartbeat this old belongs to a process that is gone: it is removed."""


@dataclass(frozen=True)
class Heartbeat:
    name: str
    """``{service}:{instance}``."""
    ts: float
    """Last beat (unix seconds)."""
    pid: int | None = None
    host: str = ""
    started: float | None = None

    @property
    def service(self) -> str:
        return self.name.split(":", 1)[0]


def beat_of_process(
    beats: Iterable[Heartbeat], pid: int, host: str, started_at: float | None
) -> Heartbeat | None:
    """The newest heartbeat process ``pid`` of ``host`` beat since it started at
    ``started_at`` (unix seconds; a beat of an earlier process with the same pid is
    not its), or None when it has not beaten (yet, or ever: the dashboard)."""
    since = (started_at or 0.0) - START_SLACK_S
    own = [
        hb for hb in beats if hb.pid == pid and hb.host == host and (hb.started or hb.ts) >= since
    ]
    return max(own, key=lambda hb: hb.ts, default=None)


async def beat(redis: aioredis.Redis, service: str) -> None:
    value = orjson.dumps(
        {
            "ts": round(time.time(), 3),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": round(STARTED_AT, 3),
        }
    )
    await redis.hset(SERVICES_HEARTBEAT, service, value)


async def service_heartbeats(redis: aioredis.Redis) -> list[Heartbeat]:
    """Every heartbeat in Redis (older plain-number ones too)."""
    out = []
    for name, raw in text_map(await redis.hgetall(SERVICES_HEARTBEAT)).items():
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, int | float):
            out.append(Heartbeat(name, float(data)))
        elif isinstance(data, dict) and isinstance(data.get("ts"), int | float):
            out.append(
                Heartbeat(
                    name,
                    float(data["ts"]),
                    data.get("pid"),
                    data.get("host", ""),
                    data.get("started"),
                )
            )
    return out


async def heartbeats(redis: aioredis.Redis) -> dict[str, float]:
    """Service instance name -> last beat (unix seconds)."""
    return {hb.name: hb.ts for hb in await service_heartbeats(redis)}


async def forget_stale_heartbeats(
    redis: aioredis.Redis, older_than_s: float = FORGET_HEARTBEAT_S
) -> int:
    """Remove the heartbeats of processes that stopped beating long ago."""
    now = time.time()
    stale = [hb.name for hb in await service_heartbeats(redis) if now - hb.ts > older_than_s]
    if stale:
        await redis.hdel(SERVICES_HEARTBEAT, *stale)
    return len(stale)
