"""Connecting to Redis, with a clear error when it does not answer."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from contreact_bus.backoff import REDIS_DOWN, Backoff
from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.redact import redact_url

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


async def connect(url: str, *, check: bool = True, wait: bool = False) -> aioredis.Redis:
    """An asyncio client (bytes in, bytes out). With ``check``, PING it first; with
    ``wait`` (services), keep trying with backoff until Redis answers, however long
    that takes, instead of failing (a service started before Redis, or during its
    restart, carries on once it is up)."""
    client = aioredis.Redis.from_url(
        url, decode_responses=False, health_check_interval=30, socket_keepalive=True
    )
    if wait:
        backoff = Backoff(f"connecting to {url}", first=0.2, log_every_s=10.0)
        while True:
            try:
                await client.ping()
                backoff.reset()
                return client
            except REDIS_DOWN as exc:
                await backoff.wait(exc)
    if check:
        try:
            await client.ping()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            await client.aclose()
            raise RedisUnavailable(
                f"Redis does not answer at {redact_url(url)} ({exc}). Start the services with "
                "`contreact up`, or set REDIS_URL to a running Redis."
            ) from None
    return client
