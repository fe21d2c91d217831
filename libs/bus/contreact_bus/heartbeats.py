"""Service heartbeats: each service process beats in one Redis hash
(``SERVICES_HEARTBEAT``: ``{service}:{instance}`` -> when, its pid, host and start), which
``contreact status``, the supervisor, ``contreact run``'s readiness check and the
containers' health check read."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass

import orjson
import redis.asyncio as aioredis

from contreact_bus.replies import text_map
from contreact_events.names import SERVICES_HEARTBEAT

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
