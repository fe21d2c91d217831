"""Waiting for the services: until every service a run needs has a fresh heartbeat
(``run``, ``experiment run``), or until what ``contreact up`` started answers."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from contreact_bus.heartbeats import heartbeats, service_heartbeats
from contreact_cli.connection import optional_redis
from contreact_cli.exceptions import ServicesNotRunning
from contreact_cli.settings import CLISettings
from contreact_cli.stack.processes import SUPERVISOR, processes, supervisor_pid
from contreact_events.config import RunConfig


def required_services(config: RunConfig | None) -> tuple[str, ...]:
    """The services a run needs: the embedder only when something of the config asks
    it (the diversity check, the paragraph guard, or the ``search_memory`` tool)."""
    base = ("orchestrator", "llm-worker", "memory")
    if config is None or config.diversity.enabled or config.tools.search_memory:
        return (*base, "embedder")
    return base


async def wait_for_services(
    redis: aioredis.Redis, settings: CLISettings, wait_s: float, needed: tuple[str, ...]
) -> None:
    """Return once every service kind has a fresh heartbeat; else say how to start them."""
    deadline = time.monotonic() + wait_s
    while True:
        beats = await heartbeats(redis)
        now = time.time()
        fresh = {
            name.split(":", 1)[0]
            for name, ts in beats.items()
            if now - ts < settings.heartbeat_fresh_s
        }
        missing = [s for s in needed if s not in fresh]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise ServicesNotRunning(
                f"no running {', '.join(missing)} service(s) answer on "
                f"{settings.redis_address().describe()}: start them with `contreact up`"
            )
        await asyncio.sleep(0.2)


async def wait_until_up(settings: CLISettings, wait_s: float) -> list[str]:
    """After `up`: ready once the supervisor runs and every process it started is
    alive now and has beaten since it started (Redis: answers). A process that keeps
    dying is named with its last words instead of waiting for nothing. Returns a line
    per process."""
    deadline = time.monotonic() + wait_s
    redis: aioredis.Redis | None = None
    waiting_for = "the supervisor"
    try:
        while True:
            if supervisor_pid(settings) is None:
                raise ServicesNotRunning(
                    "the supervisor is not running: see "
                    f"{settings.data_dir / 'logs' / 'supervisor.log'}"
                )
            infos = [p for p in processes(settings) if p.name != SUPERVISOR]
            if redis is None and infos:
                redis = await optional_redis(settings)
            beats = await service_heartbeats(redis) if redis is not None else []
            ready, lines = [], []
            for info in infos:
                if info.kind == "redis":
                    ok = info.alive and redis is not None
                else:
                    ok = info.alive and any(
                        hb.pid == info.pid and hb.ts >= (info.started_at or 0) - 1 for hb in beats
                    )
                ready.append(ok)
                lines.append(f"{info.name}: running (pid {info.pid}, log {info.log})")
                if not ok and info.restarts >= 2:
                    raise ServicesNotRunning(
                        f"{info.name} keeps exiting at start ({info.last_exit}: "
                        f"{info.last_error or 'no output'}); its log: {info.log} "
                        "(`contreact down` stops trying)"
                    )
            if infos and all(ready):
                return lines
            waiting_for = ", ".join(i.name for i, ok in zip(infos, ready, strict=True) if not ok)
            if time.monotonic() > deadline:
                raise ServicesNotRunning(
                    f"not ready within {wait_s:.0f} s: {waiting_for or 'the supervisor'} "
                    f"(see `contreact status` and {settings.data_dir / 'logs'})"
                )
            await asyncio.sleep(0.25)
    finally:
        if redis is not None:
            await redis.aclose()
