"""The CLI's Redis connections: one for a command that needs Redis, or an optional
one where the archive alone can answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis

from contreact_bus.connection import connect
from contreact_cli.settings import CLISettings


@asynccontextmanager
async def redis_client(settings: CLISettings) -> AsyncIterator[aioredis.Redis]:
    client = await connect(settings.resolved_redis_url())
    try:
        yield client
    finally:
        await client.aclose()


async def optional_redis(settings: CLISettings) -> aioredis.Redis | None:
    """Redis if it answers; the archive alone serves finished runs without it."""
    try:
        return await connect(settings.resolved_redis_url())
    except Exception:
        return None
