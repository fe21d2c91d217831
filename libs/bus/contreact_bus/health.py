"""A container's health check: ``python -m contreact_bus.health SERVICE``.

Healthy when a heartbeat of ``SERVICE`` that this process's host (the container) beat
is fresh: every service names its heartbeat ``{service}:{consumer}``, and a consumer
name in a container starts with the container's host name (the workers' default is
``{hostname}-{pid}``; the orchestrator's image sets its name to the host name). So a
replica is judged by its own heartbeat, not by a sibling's. Exit 0 when healthy, 1
otherwise, with one line saying why (shown by ``docker inspect``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.runs import heartbeats


def own_beats(beats: dict[str, float], service: str, consumer: str) -> dict[str, float]:
    """The heartbeats of ``service`` whose consumer is ``consumer`` or ``consumer-*``."""
    own = {}
    for name, ts in beats.items():
        kind, _, who = name.partition(":")
        if kind == service and (who == consumer or who.startswith(f"{consumer}-")):
            own[name] = ts
    return own


def verdict(
    beats: dict[str, float], service: str, consumer: str, max_age_s: float, now: float
) -> tuple[bool, str]:
    own = own_beats(beats, service, consumer)
    if not own:
        return False, f"no heartbeat of {service} from {consumer} yet"
    name, ts = max(own.items(), key=lambda item: item[1])
    age = now - ts
    if age > max_age_s:
        return False, f"{name} last beat {age:.1f} s ago (more than {max_age_s:g} s)"
    return True, f"{name} beat {age:.1f} s ago"


async def check(url: str, service: str, consumer: str, max_age_s: float) -> tuple[bool, str]:
    client = aioredis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        beats = await heartbeats(client)
    except (RedisError, OSError) as exc:
        return False, f"Redis does not answer at {url} ({type(exc).__name__})"
    finally:
        await client.aclose()
    return verdict(beats, service, consumer, max_age_s, time.time())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m contreact_bus.health", description=__doc__)
    parser.add_argument("service", help="orchestrator, llm-worker, memory, embedder, ...")
    parser.add_argument(
        "--consumer", default=socket.gethostname(), help="default: this host's name"
    )
    parser.add_argument(
        "--max-age", type=float, default=10.0, help="seconds a heartbeat stays fresh (10)"
    )
    args = parser.parse_args(argv)
    url = os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)
    healthy, why = asyncio.run(check(url, args.service, args.consumer, args.max_age))
    print(why)
    sys.exit(0 if healthy else 1)


if __name__ == "__main__":
    main()
