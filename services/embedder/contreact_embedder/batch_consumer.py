"""The embedder's consume loop: ``serve_batches`` with the service heartbeat beside
it, until SIGTERM/SIGINT (the batch twin of ``contreact_bus.service.run_consumer``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel

from contreact_bus.runs import beat
from contreact_bus.service import heartbeat, stop_on_signals
from contreact_bus.task_stream import Consumer, serve_batches

M = TypeVar("M", bound=BaseModel)


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
    """Serve ``consumer`` in batches until stopped (or, with ``burst``, until idle)."""
    with stop_on_signals() as stop:
        name = f"{service}:{consumer.name}"
        await beat(redis, name)
        beating = asyncio.create_task(heartbeat(redis, name, heartbeat_s, stop))
        try:
            return await serve_batches(consumer, model, handle, burst=burst, stop=stop)
        finally:
            stop.set()
            await beating
