"""A container's health check: ``python -m contreact_bus.health SERVICE``.

Healthy when a heartbeat of ``SERVICE`` that this process's host (the container) beat
is fresh: every service names its heartbeat ``{service}:{consumer}``, and a consumer
name in a container starts with the container's host name (every service's default,
the orchestrator's replica name included, is ``{hostname}-{pid}``:
``contreact_bus.service.instance_name``). So a
replica is judged by its own heartbeat, not by a sibling's. Exit 0 when healthy, 1
otherwise, with one line saying why (shown by ``docker inspect``).

A Redis that does not answer is not judged against the container (exit 0, saying so):
every service waits for Redis and reconnects by itself, so a restart mends nothing,
and during a failover or a Redis restart it would kill every replica of every service
at once (a swarm test beside a CPU hog saw its rolling update rolled back so). A
service that is stuck still shows a stale beat once Redis answers again.

Docker runs this every few seconds in every container, so it stays light: the sync
Redis client and the standard library only. Importing ``contreact_bus.runs`` would
build the whole event catalog first (about 0.7 s of CPU per check, in each
container). The heartbeat hash's name is read from ``contreact_events/names.py``
without importing the package around it, and ``beat_time`` reads a value as
``contreact_bus.heartbeats.heartbeats`` does (a test keeps the two in step).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import ModuleType

from redis.exceptions import RedisError

from contreact_bus.failover.address import RedisAddress, redis_client

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
"""As ``contreact_bus.connection.DEFAULT_REDIS_URL`` (not imported: it pulls in asyncio)."""


def names_module() -> ModuleType:
    """``contreact_events.names`` loaded alone (its package's ``__init__`` builds the
    event catalog, which a health check does not need)."""
    spec = importlib.util.find_spec("contreact_events")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("contreact_events is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "names.py"
    names_spec = importlib.util.spec_from_file_location("_contreact_names", path)
    assert names_spec is not None and names_spec.loader is not None
    module = importlib.util.module_from_spec(names_spec)
    names_spec.loader.exec_module(module)
    return module


def beat_time(value: bytes | str) -> float:
    """The time (unix seconds) of a heartbeat value, as ``runs.service_heartbeats``
    reads it: a JSON object with ``ts`` (pid and start time beside it), or, from older
    processes, a plain number."""
    data = json.loads(value)
    if isinstance(data, dict):
        return float(data["ts"])
    return float(data)


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


def read_beats(address: RedisAddress | str) -> dict[str, float]:
    if isinstance(address, str):
        address = RedisAddress(address)
    client = redis_client(address, asyncio=False, socket_connect_timeout=2, socket_timeout=2)
    try:
        raw = client.hgetall(names_module().SERVICES_HEARTBEAT)
    finally:
        client.close()
    beats = {}
    for key, value in raw.items():
        try:
            beats[_text(key)] = beat_time(value)
        except (ValueError, KeyError, TypeError):
            continue  # not a heartbeat this code can read: not ours to judge
    return beats


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def check(
    address: RedisAddress | str, service: str, consumer: str, max_age_s: float
) -> tuple[bool, str]:
    if isinstance(address, str):
        address = RedisAddress(address)
    try:
        beats = read_beats(address)
    except (RedisError, OSError) as exc:
        return True, (
            f"Redis does not answer at {address.describe()} ({type(exc).__name__}): not "
            "judged, the service waits for it and reconnects by itself"
        )
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
    address = RedisAddress.of(
        os.environ.get("REDIS_URL", DEFAULT_REDIS_URL),
        os.environ.get("REDIS_SENTINELS"),
        os.environ.get("REDIS_MASTER_NAME"),
    )
    healthy, why = check(address, args.service, args.consumer, args.max_age)
    print(why)
    sys.exit(0 if healthy else 1)


if __name__ == "__main__":
    main()
