"""Entry point: ``contreact-orchestrator [--burst]``."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from contreact_bus.code_version import code_version
from contreact_bus.connection import connect
from contreact_bus.service import serving, setup_logging
from contreact_bus.task_stream import Consumer, ConsumerSettings, serve
from contreact_events.names import INBOX_GROUP, INBOX_SHARDS_KEY, inbox_stream
from contreact_events.tasks import InboxMessage
from contreact_orchestrator.orchestrator import Orchestrator
from contreact_orchestrator.settings import OrchestratorSettings


async def run(settings: OrchestratorSettings, *, burst: bool = False) -> int:
    redis = await connect(settings.redis_url)
    await redis.set(INBOX_SHARDS_KEY, settings.shards, nx=True)
    shards = int(await redis.get(INBOX_SHARDS_KEY) or settings.shards)
    consumer_settings = ConsumerSettings(
        block_ms=settings.block_ms,
        batch_size=settings.batch_size,
        reclaim_idle_ms=settings.reclaim_idle_ms,
    )
    consumers = [
        Consumer(redis, inbox_stream(i), INBOX_GROUP, settings.consumer_name, consumer_settings)
        for i in range(shards)
    ]
    stamp = code_version("contreact-orchestrator", Path(__file__))
    orchestrator = Orchestrator(redis, settings.archive_dir, stamp)
    for consumer in consumers:
        await consumer.ensure_group()
    await orchestrator.recover()
    try:
        async with serving(redis, "orchestrator", consumers[0], settings.heartbeat_s) as stop:
            counts = await asyncio.gather(
                *(
                    serve(consumer, InboxMessage, orchestrator.handle, burst=burst, stop=stop)
                    for consumer in consumers
                )
            )
            return sum(counts)
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="contreact-orchestrator")
    parser.add_argument("--burst", action="store_true", help="handle what is waiting, then exit")
    args = parser.parse_args()
    settings = OrchestratorSettings()
    setup_logging(settings.log_level)
    asyncio.run(run(settings, burst=args.burst))
