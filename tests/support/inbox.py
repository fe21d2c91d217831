"""The inbox of tests that play the orchestrator: one shard, so one stream in order."""

from __future__ import annotations

import redis.asyncio as aioredis

from contreact_events.names import INBOX_SHARDS_KEY, inbox_stream

INBOX = inbox_stream(0)
"""The only inbox stream once ``use_one_shard`` ran."""


async def use_one_shard(redis: aioredis.Redis) -> str:
    """Make this Redis a deployment with one inbox shard; return its stream."""
    await redis.set(INBOX_SHARDS_KEY, 1)
    return INBOX
