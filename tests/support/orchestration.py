"""For tests that play one side of the bus: an orchestrator that owns the inbox shard
(through a real lease), and the record a worker's task gate checks."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis
from pydantic import BaseModel

from contreact_bus.llm_routes import known_routes, route_of
from contreact_bus.replies import entries
from contreact_bus.streams.inbox import Inbox
from contreact_events.names import LLM_TASKS_STREAM, run_writer_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import LLMTask, task_digest
from contreact_orchestrator.leases import ShardLeases
from contreact_orchestrator.orchestrator import Orchestrator


async def ask_for(redis: aioredis.Redis, run_id: str, task: BaseModel) -> None:
    """Record ``task`` as the one its run waits on, as the orchestrator's append does
    (for tests where the test plays the orchestrator and a worker checks the task)."""
    task_id = str(getattr(task, "task_id"))  # noqa: B009 (tasks of every kind have one)
    await redis.hset(run_writer_key(run_id), mapping={"task": task_id, "digest": task_digest(task)})


async def llm_tasks(redis: aioredis.Redis) -> list[LLMTask]:
    """Model checks and chat tasks (each on its route's stream), in the order sent."""
    streams = [LLM_TASKS_STREAM, *(r.stream for r in (await known_routes(redis)).values())]
    sent = [entry for stream in streams for entry in entries(await redis.xrange(stream))]
    return [message_from_fields(LLMTask, f) for _, f in sorted(sent, key=_entry_order)]


def chat_stream(check: LLMTask, backend: str = "scripted") -> str:
    """The stream a run's chat tasks go to, from its model check's task."""
    chat = check.model_copy(update={"kind": "chat", "backend": backend})
    return route_of(chat).stream


def _entry_order(entry: tuple[bytes, object]) -> tuple[int, ...]:
    return tuple(int(part) for part in entry[0].split(b"-"))


async def owning_orchestrator(
    redis: aioredis.Redis,
    archive_dir: Path,
    *,
    version: str = "1",
    owner: str = "orchestrator-under-test",
    ttl_s: float = 600.0,
    log_retention_s: float = 3600.0,
) -> Orchestrator:
    """An orchestrator on a one-shard deployment that took the shard's lease (and so
    recovered its runs), as a replica does at start."""
    orchestrator = Orchestrator(
        redis, archive_dir, version, Inbox(redis, 1), log_retention_s=log_retention_s
    )
    lease = await ShardLeases(redis, owner, ttl_s).acquire(0)
    assert lease is not None, "the shard's lease is held by another owner"
    await orchestrator.take_shard(lease)
    return orchestrator
