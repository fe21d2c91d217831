"""What every service process shares: logging setup, stop on SIGTERM/SIGINT, a
heartbeat (for `contreact status` and `contreact run`'s readiness check), and the
consume loop with the heartbeat beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel

from contreact_bus.runs import beat
from contreact_bus.task_stream import Consumer, serve

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def stop_on_signals() -> asyncio.Event:
    """An event set on SIGTERM or SIGINT (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def heartbeat(
    redis: aioredis.Redis, service: str, every_s: float, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        try:
            await beat(redis, service)
        except Exception as exc:  # a missed beat is not worth dying for
            log.warning("heartbeat failed: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every_s)


async def run_consumer(
    redis: aioredis.Redis,
    consumer: Consumer,
    model: type[M],
    handle: Callable[[M], Awaitable[None]],
    *,
    service: str,
    burst: bool = False,
    concurrency: int = 1,
    heartbeat_s: float = 2.0,
) -> int:
    """Serve ``consumer`` until SIGTERM/SIGINT (or, with ``burst``, until idle),
    beating the service's heartbeat meanwhile."""
    stop = stop_on_signals()
    beating = asyncio.create_task(heartbeat(redis, f"{service}:{consumer.name}", heartbeat_s, stop))
    try:
        return await serve(consumer, model, handle, burst=burst, concurrency=concurrency, stop=stop)
    finally:
        stop.set()
        await beating
