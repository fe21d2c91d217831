"""The producer side of the orchestrator's inbox: every result and command for a run
goes to the run's shard (``inbox_shard``), read by the one orchestrator that holds it.

The number of shards is set once per deployment (the first orchestrator writes it to
``INBOX_SHARDS_KEY``); producers read it once, when they open the inbox.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.task_stream import TaskStream
from contreact_events.names import (
    DEFAULT_INBOX_SHARDS,
    INBOX_SHARDS_KEY,
    inbox_shard,
    inbox_stream,
)
from contreact_events.tasks import InboxMessage


async def inbox_shards(redis: aioredis.Redis) -> int:
    """The deployment's shard count (the default until an orchestrator has set it)."""
    value = await redis.get(INBOX_SHARDS_KEY)
    return int(value) if value else DEFAULT_INBOX_SHARDS


class Inbox:
    """Sends inbox messages to their run's shard. Build it with ``await Inbox.open(redis)``."""

    def __init__(self, redis: aioredis.Redis, shards: int) -> None:
        self._redis = redis
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
