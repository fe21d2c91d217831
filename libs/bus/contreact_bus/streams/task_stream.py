"""The producer side of a task stream (tasks, or one shard of the orchestrator's
inbox): entries added with a safety cap on the stream's length. Reading through a
consumer group is in ``consumer``, the loop that serves one in ``serving``."""

from __future__ import annotations

import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.client import Pipeline

from contreact_bus.replies import as_bytes, stream_fields
from contreact_events.wire.codec import MESSAGE_FIELD, message_to_fields

DEFAULT_MAXLEN = 100_000
"""A safety cap on a stream's length; housekeeping trims what is acked long before."""


class TaskStream:
    """Producer side of a stream (tasks, or one shard of the orchestrator's inbox)."""

    def __init__(self, redis: aioredis.Redis, stream: str, *, maxlen: int = DEFAULT_MAXLEN):
        self._redis = redis
        self.stream = stream
        self._maxlen = maxlen

    async def send(self, message: BaseModel) -> bytes:
        entry_id = await self._redis.xadd(
            self.stream,
            stream_fields(message_to_fields(message)),
            maxlen=self._maxlen,
            approximate=True,
        )
        return as_bytes(entry_id)

    def queue(self, pipe: Pipeline, message: BaseModel, raw: bytes | None = None) -> None:
        """Add a send to a caller's pipeline (no round trip of its own). ``raw``: the
        message already encoded (``codec.message_to_fields``'s field), not encoded again."""
        fields = stream_fields(
            {MESSAGE_FIELD: raw} if raw is not None else message_to_fields(message)
        )
        pipe.xadd(self.stream, fields, maxlen=self._maxlen, approximate=True)
