"""Entry point: settings, Redis, the handler, serve ``tasks:llm`` until stopped."""

from __future__ import annotations

import argparse
import asyncio

from contreact_bus.connection import connect
from contreact_bus.inbox import Inbox, tell_run_of_dead_letter
from contreact_bus.service import run_consumer, setup_logging
from contreact_bus.task_stream import Consumer, ConsumerSettings
from contreact_events.names import LLM_GROUP, LLM_TASKS_STREAM
from contreact_events.tasks import LLMTask
from contreact_llm.handler import build_handler
from contreact_llm.settings import LLMWorkerSettings


async def run(settings: LLMWorkerSettings, *, burst: bool = False) -> int:
    redis = await connect(settings.redis_url, wait=True)
    handler = await build_handler(redis, settings)
    consumer = Consumer(
        redis,
        LLM_TASKS_STREAM,
        LLM_GROUP,
        settings.consumer_name,
        ConsumerSettings(block_ms=settings.block_ms, reclaim_idle_ms=settings.reclaim_idle_ms),
        on_dead_letter=tell_run_of_dead_letter(await Inbox.open(redis)),
    )
    try:
        return await run_consumer(
            redis,
            consumer,
            LLMTask,
            handler,
            service="llm-worker",
            burst=burst,
            concurrency=settings.concurrency,
            heartbeat_s=settings.heartbeat_s,
        )
    finally:
        await handler.aclose()
        await redis.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-llm-worker")
    parser.add_argument("--burst", action="store_true", help="process waiting tasks, then exit")
    args = parser.parse_args(argv)
    setup_logging()
    asyncio.run(run(LLMWorkerSettings(), burst=args.burst))
