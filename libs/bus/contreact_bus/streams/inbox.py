"""The producer side of the orchestrator's inbox: every result and command for a run
goes to the run's shard (``inbox_shard``), read by the one orchestrator that holds it.

The number of shards is set once per deployment (the first orchestrator writes it to
``INBOX_SHARDS_KEY``); producers read it once, when they open the inbox.
"""

from __future__ import annotations

import orjson
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.streams.consumer import DeadLetterHook, Delivery
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.config import RUN_ID_PATTERN
from contreact_events.names import (
    DEFAULT_INBOX_SHARDS,
    INBOX_SHARDS_KEY,
    inbox_shard,
    inbox_stream,
)
from contreact_events.wire.answers import llm_failed, task_failed
from contreact_events.wire.tasks import InboxMessage, LLMTask


async def inbox_shards(redis: aioredis.Redis) -> int:
    """The deployment's shard count (the default until an orchestrator has set it)."""
    value = await redis.get(INBOX_SHARDS_KEY)
    return int(value) if value else DEFAULT_INBOX_SHARDS


class Inbox:
    """Sends inbox messages to their run's shard. Build it with ``await Inbox.open(redis)``."""

    def __init__(self, redis: aioredis.Redis, shards: int) -> None:
        self.redis = redis
        self.shards = shards
        self._streams = [TaskStream(redis, inbox_stream(i)) for i in range(shards)]

    @classmethod
    async def open(cls, redis: aioredis.Redis) -> Inbox:
        return cls(redis, await inbox_shards(redis))

    def stream_for(self, run_id: str) -> TaskStream:
        return self._streams[inbox_shard(run_id, self.shards)]

    async def send(self, message: InboxMessage) -> bytes:
        return await self.stream_for(message.run_id).send(message)

    def queue(self, pipe: Pipeline, message: InboxMessage) -> None:
        """Add a send to a caller's pipeline (no round trip of its own)."""
        self.stream_for(message.run_id).queue(pipe, message)


def tell_run_of_dead_letter(inbox: Inbox) -> DeadLetterHook:
    """A dead-letter hook: a task (or a worker's result) that was dead-lettered comes
    back to its run as ``TaskFailed``, so the run retries or fails instead of waiting
    for an answer that will never come."""

    async def hook(delivery: Delivery, reason: str) -> None:
        try:
            data = orjson.loads(delivery.fields.get(b"msg") or b"{}")
        except orjson.JSONDecodeError:
            return
        if not isinstance(data, dict) or data.get("kind") == "TaskFailed":
            return
        if data.get("reply_to"):  # an assessment job's call: the job, not the run, waits
            await _tell_job(inbox, data, reason)
            return
        run_id = data.get("run_id")
        task_id = data.get("task_id") or data.get("causation_id")
        if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
            return
        if not isinstance(task_id, str) or not task_id:
            return
        send = data.get("send")
        failure = task_failed(
            run_id,
            task_id,
            "dead_lettered",
            reason[:2000],
            send=send if isinstance(send, int) and not isinstance(send, bool) else None,
        )
        await inbox.send(failure)

    return hook


async def _tell_job(inbox: Inbox, data: dict[str, object], reason: str) -> None:
    """A dead-lettered evaluator call is answered to its assessment job as a failure
    (the job retries or records it), instead of the job waiting out its timeout."""
    try:
        task = LLMTask.model_validate(data)
    except ValueError:
        return
    if task.reply_to is None:
        return
    failure = llm_failed(task, f"dead-lettered: {reason[:2000]}", retryable=True, attempts=1)
    async with inbox.redis.pipeline(transaction=False) as pipe:
        evaluator_calls.queue_reply(pipe, task.reply_to, failure)
        await pipe.execute()
