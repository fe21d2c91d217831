"""Entry point: ``contreact-memory [--burst]`` serves ``tasks:memory`` until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio

from contreact_bus.connection import connect
from contreact_bus.run_log import RunLog
from contreact_bus.service import run_consumer, setup_logging
from contreact_bus.streams.consumer import Consumer
from contreact_bus.streams.inbox import Inbox, tell_run_of_dead_letter
from contreact_bus.streams.task_gate import TaskGate
from contreact_events.names import MEMORY_GROUP, MEMORY_TASKS_STREAM
from contreact_events.wire.tasks import MemoryTask
from contreact_memory.handler import MemoryHandler
from contreact_memory.settings import MemorySettings
from contreact_memory.store import MemoryStore


async def run(settings: MemorySettings, *, burst: bool = False) -> int:
    """Serve until SIGTERM/SIGINT (or, with ``burst``, until the stream is drained)."""
    store, redis = MemoryStore.open(settings.database), await connect(settings.redis, wait=True)
    inbox = await Inbox.open(redis)
    consumer = Consumer(
        redis,
        MEMORY_TASKS_STREAM,
        MEMORY_GROUP,
        settings.consumer_name,
        settings.consumer_settings(),
        on_dead_letter=tell_run_of_dead_letter(inbox),
    )
    try:
        handler = MemoryHandler(store, inbox, TaskGate(redis), RunLog(redis))
        return await run_consumer(
            redis,
            consumer,
            MemoryTask,
            handler,
            service="memory",
            burst=burst,
            heartbeat_s=settings.heartbeat_s,
        )
    finally:
        store.close()
        await redis.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-memory", description=__doc__)
    parser.add_argument("--burst", action="store_true", help="exit once the stream is drained")
    args = parser.parse_args(argv)
    setup_logging()
    asyncio.run(run(MemorySettings(), burst=args.burst))
