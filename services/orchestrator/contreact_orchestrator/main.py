"""Entry point: ``contreact-orchestrator [--burst]``."""

from __future__ import annotations

import argparse
import asyncio
from importlib.metadata import version

from contreact_bus.connection import connect
from contreact_bus.service import run_consumer, setup_logging
from contreact_bus.task_stream import Consumer, ConsumerSettings
from contreact_events.names import INBOX_GROUP, INBOX_STREAM
from contreact_events.tasks import InboxMessage
from contreact_orchestrator.orchestrator import Orchestrator
from contreact_orchestrator.settings import OrchestratorSettings


async def run(settings: OrchestratorSettings, *, burst: bool = False) -> int:
    redis = await connect(settings.redis_url)
    consumer_settings = ConsumerSettings(
        block_ms=settings.block_ms,
        batch_size=settings.batch_size,
        reclaim_idle_ms=settings.reclaim_idle_ms,
    )
    consumer = Consumer(redis, INBOX_STREAM, INBOX_GROUP, settings.consumer_name, consumer_settings)
    orchestrator = Orchestrator(redis, settings.archive_dir, version("contreact-orchestrator"))
    await consumer.ensure_group()
    await orchestrator.recover()
    try:
        return await run_consumer(
            redis,
            consumer,
            InboxMessage,
            orchestrator.handle,
            service="orchestrator",
            burst=burst,
            heartbeat_s=settings.heartbeat_s,
        )
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="contreact-orchestrator")
    parser.add_argument("--burst", action="store_true", help="handle what is waiting, then exit")
    args = parser.parse_args()
    settings = OrchestratorSettings()
    setup_logging(settings.log_level)
    asyncio.run(run(settings, burst=args.burst))
