"""The CLI's Redis connections: one for a command that needs Redis, or an optional
one where the archive alone can answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
import redis.asyncio as aioredis

from contreact_bus.connection import connect
from contreact_bus.failover.address import redis_client as address_client
from contreact_cli.settings import CLISettings


@asynccontextmanager
async def redis_client(settings: CLISettings) -> AsyncIterator[aioredis.Redis]:
    client = await connect(settings.redis_address())
    try:
        yield client
    finally:
        await client.aclose()


async def optional_redis(settings: CLISettings) -> aioredis.Redis | None:
    """Redis if it answers; the archive alone serves finished runs without it."""
    try:
        return await connect(settings.redis_address())
    except Exception:
        return None


def rq_connection(settings: CLISettings) -> redis.Redis:
    """rq's (sync) client: ``CONTREACT_RQ_REDIS_URL``, else the platform's Redis, through
    its sentinels when they are configured."""
    client: redis.Redis = address_client(settings.rq_redis_address(), asyncio=False)
    return client
