"""What every service process shares: logging setup, stop on SIGTERM/SIGINT, a
heartbeat (for `contreact status` and `contreact run`'s readiness check), and the
consume loop with the heartbeat beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel

from contreact_bus.backoff import REDIS_DOWN
from contreact_bus.heartbeats import beat, forget_stale_heartbeats
from contreact_bus.streams.consumer import Consumer
from contreact_bus.streams.serving import serve, serve_batches

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


SIGNALS = (signal.SIGTERM, signal.SIGINT)


def instance_name(pid: int | None = None, host: str | None = None) -> str:
    """A service process's default consumer (or replica) name: host and process id, so
    the supervisor that started it can name what a child it saw die was holding."""
    return f"{host or socket.gethostname()}-{pid or os.getpid()}"


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set on SIGTERM or SIGINT while the block runs (inside the loop); the
    handlers are removed afterwards, so a test's loop is left as it was."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)


async def heartbeat(
    redis: aioredis.Redis, service: str, every_s: float, stop: asyncio.Event
) -> None:
    """Beat every ``every_s`` until ``stop``; now and then, remove the heartbeats of
    processes gone long ago (so the hash lists what runs, not what ever ran)."""
    beats = 0
    while not stop.is_set():
        try:
            await beat(redis, service)
            if beats % 100 == 0:
                await forget_stale_heartbeats(redis)
            beats += 1
        except Exception as exc:  # a missed beat is not worth dying for
            log.debug("heartbeat failed: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every_s)


@contextlib.asynccontextmanager
async def serving(
    redis: aioredis.Redis, service: str, instance: str, heartbeat_s: float
) -> AsyncIterator[asyncio.Event]:
    """While the block runs: stop on SIGTERM/SIGINT, and beat the heartbeat of
    ``{service}:{instance}``. Yields the stop event for the service's loop."""
    with stop_on_signals() as stop:
        name = f"{service}:{instance}"
        with contextlib.suppress(*REDIS_DOWN):
            await beat(redis, name)
        beating = asyncio.create_task(heartbeat(redis, name, heartbeat_s, stop))
        try:
            yield stop
        finally:
            stop.set()
            await beating


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
    """Serve ``consumer`` one entry at a time (``concurrency`` at once) until
    SIGTERM/SIGINT, or with ``burst`` until idle."""
    async with serving(redis, service, consumer.name, heartbeat_s) as stop:
        return await serve(consumer, model, handle, burst=burst, concurrency=concurrency, stop=stop)


async def run_batch_consumer(
    redis: aioredis.Redis,
    consumer: Consumer,
    model: type[M],
    handle: Callable[[list[M]], Awaitable[None]],
    *,
    service: str,
    burst: bool = False,
    heartbeat_s: float = 2.0,
) -> int:
    """Serve ``consumer`` in batches (everything one read returns) until stopped."""
    async with serving(redis, service, consumer.name, heartbeat_s) as stop:
        return await serve_batches(consumer, model, handle, burst=burst, stop=stop)
