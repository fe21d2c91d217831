"""Runs on a real Redis with every part in this process: the orchestrator (owning the
one inbox shard), and the LLM worker (scripted backend) and memory service entry
points in burst mode, taken in turns until nothing moves. Deterministic, and no
embedder: configs keep the diversity check off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.names import INBOX_GROUP
from contreact_events.wire.tasks import InboxMessage
from contreact_llm.main import run as run_llm_worker
from contreact_llm.settings import LLMWorkerSettings
from contreact_memory.main import run as run_memory_service
from contreact_memory.settings import MemorySettings
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import make_config

FAST = ConsumerSettings(block_ms=20, reclaim_idle_ms=60_000, reclaim_every_s=60.0)

REPLIES: list[dict[str, Any]] = [
    {"content": "cycle {cycle}: a first look around"},  # call 0: cycle 1
    {"tool_calls": [{"name": "write", "arguments": {"key": "plan", "value": "from cycle 2"}}]},
    {"content": "cycle {cycle}: I wrote my plan down"},  # call 2: cycle 2
    {"content": "cycle {cycle}: thinking"},  # call 3: cycle 3
    {"tool_calls": [{"name": "read", "arguments": {"key": "plan"}}]},  # call 4: cycle 4
    {"content": "cycle {cycle}: I read my plan back"},  # call 5: cycle 4
    {"content": "cycle {cycle}: thinking"},  # call 6: cycle 5
    {"content": "cycle {cycle}: thinking"},  # call 7: cycle 6
]
"""Six cycles by LLM call index: cycle 2 writes a key, cycle 4 reads it (a fork at 3
continues the indices, so its cycle 4 reads it too)."""


def six_cycle_config(run_id: str, **overrides: Any) -> dict[str, Any]:
    config = make_config(
        run_id=run_id, cycle_count=6, script={"replies": REPLIES, "repeat": True}, **overrides
    )
    return config.model_dump(mode="json")


class BusRun:
    """The services of one test, in this process."""

    def __init__(
        self, redis: aioredis.Redis, redis_url: str, data_dir: Path, orchestrator: Orchestrator
    ) -> None:
        self.redis = redis
        self.orchestrator = orchestrator
        self.memory = MemorySettings(
            redis_url=redis_url, data_dir=data_dir, consumer_name="memory", block_ms=20
        )
        self.llm = LLMWorkerSettings(
            redis_url=redis_url, consumer_name="llm", backoff_base_s=0.001, block_ms=20
        )

    async def submit(self, config: dict[str, Any]) -> InboxMessage:
        message = InboxMessage(
            run_id=config["run_id"], kind="RunRequested", data={"config": config}
        )
        return await self.send(message)

    async def send(self, message: InboxMessage) -> InboxMessage:
        await TaskStream(self.redis, INBOX).send(message)
        return message

    async def decide_inbox(self) -> int:
        consumer = Consumer(self.redis, INBOX, INBOX_GROUP, "orchestrator", FAST)
        return await serve(consumer, InboxMessage, self.orchestrator.handle, burst=True)

    async def settle(self, rounds: int = 500) -> None:
        """Take turns until a round moves nothing."""
        for _ in range(rounds):
            moved = await self.decide_inbox()
            moved += await run_llm_worker(self.llm, burst=True)
            moved += await run_memory_service(self.memory, burst=True)
            if not moved:
                return
        raise AssertionError(f"the runs did not settle in {rounds} rounds")


async def bus_run(redis: aioredis.Redis, redis_url: str, data_dir: Path) -> BusRun:
    """The services of one test, the orchestrator owning the one inbox shard."""
    await use_one_shard(redis)
    orchestrator = await owning_orchestrator(redis, data_dir / "runs", log_retention_s=60)
    return BusRun(redis, redis_url, data_dir, orchestrator)
