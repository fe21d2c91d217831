"""Entry point: settings, Redis, the handler; answer model checks from ``tasks:llm``
and chat tasks from their routes' streams until stopped."""

from __future__ import annotations

import argparse
import asyncio

import redis.asyncio as aioredis

from contreact_bus.connection import connect
from contreact_bus.service import serving, setup_logging
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import tell_run_of_dead_letter
from contreact_bus.streams.serving import serve
from contreact_events.names import LLM_GROUP, LLM_TASKS_STREAM
from contreact_events.wire.tasks import LLMTask
from contreact_llm.handler import LLMTaskHandler, build_handler
from contreact_llm.scheduling.host_slots import HostSlots
from contreact_llm.scheduling.scheduler import ChatScheduler, SchedulerSettings
from contreact_llm.settings import LLMWorkerSettings


async def run(
    settings: LLMWorkerSettings, *, burst: bool = False, stop: asyncio.Event | None = None
) -> int:
    """Serve until SIGTERM/SIGINT or ``stop`` (with ``burst``: until nothing waits).
    Returns the checks answered plus the calls started."""
    redis = await connect(settings.redis, wait=True)
    handler = await build_handler(redis, settings)
    checks = Consumer(
        redis,
        LLM_TASKS_STREAM,
        LLM_GROUP,
        settings.consumer_name,
        ConsumerSettings(block_ms=settings.block_ms, reclaim_idle_ms=settings.reclaim_idle_ms),
        on_dead_letter=tell_run_of_dead_letter(handler.inbox),
    )
    chats = build_scheduler(redis, handler, settings)
    try:
        async with serving(redis, "llm-worker", checks.name, settings.heartbeat_s) as stopping:
            if stop is not None:
                relay = asyncio.create_task(stop.wait())
                relay.add_done_callback(lambda _done: stopping.set())
            counts = await asyncio.gather(
                serve(
                    checks,
                    LLMTask,
                    handler,
                    burst=burst,
                    concurrency=settings.check_concurrency,
                    stop=stopping,
                ),
                chats.run(stopping, burst=burst),
            )
            return sum(counts)
    finally:
        await handler.aclose()
        await redis.aclose()


def build_scheduler(
    redis: aioredis.Redis, handler: LLMTaskHandler, settings: LLMWorkerSettings
) -> ChatScheduler:
    return ChatScheduler(
        redis,
        handler,
        HostSlots(redis, settings.slot_times),
        settings.host_limits,
        SchedulerSettings(
            consumer_name=settings.consumer_name,
            concurrency=settings.concurrency,
            policy=settings.policy,
            max_wait_ms=int(settings.max_wait_s * 1000),
            poll_s=settings.poll_s,
            reclaim_idle_ms=settings.reclaim_idle_ms,
            host_down_ms=int(settings.host_down_s * 1000),
            stick_wait_s=settings.pool_stick_wait_s,
        ),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-llm-worker")
    parser.add_argument("--burst", action="store_true", help="process waiting tasks, then exit")
    args = parser.parse_args(argv)
    setup_logging()
    asyncio.run(run(LLMWorkerSettings(), burst=args.burst))
