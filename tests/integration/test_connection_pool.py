"""A service's Redis client never fails a command for want of a free connection: past
``max_connections`` commands in flight, the next one waits for a connection to come
back (issue 20: redis-py's default pool raised "Too many connections" at the 101st, and
an LLM worker running 200 calls lost its gate checks to it); a wait that outlasts the
pool's timeout fails with an error that says why."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from contreact_bus.connection import MAX_CONNECTIONS, WaitingConnectionPool, connect
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A service's client (``connect``), closed after the test."""
    made = await connect(redis_url)
    yield made
    await made.aclose()


def pool_of(client: aioredis.Redis, max_connections: int, timeout: float) -> WaitingConnectionPool:
    """``client``'s pool, made small: ``max_connections`` at most, waits of ``timeout`` s."""
    pool = client.connection_pool
    assert isinstance(pool, WaitingConnectionPool)
    pool.max_connections, pool.timeout = max_connections, timeout
    return pool


async def hold(client: aioredis.Redis, seconds: float) -> object:
    """Hold one connection for ``seconds`` (a blocking pop of a list nobody fills)."""
    return await client.blpop(["never"], timeout=seconds)


async def read(client: aioredis.Redis, key: str) -> object:
    return await client.get(key)


async def test_more_commands_in_flight_than_connections_all_complete(
    client: aioredis.Redis,
) -> None:
    assert client.connection_pool.max_connections == MAX_CONNECTIONS
    pool = pool_of(client, 20, 30.0)  # 60 commands holding a connection 0.2 s each
    replies = await asyncio.gather(*(client.blpop([f"never-{n}"], timeout=0.2) for n in range(60)))
    assert replies == [None] * 60
    assert len(pool._in_use_connections) + len(pool._available_connections) <= 20
    assert await client.ping()


async def test_a_wait_longer_than_the_timeout_fails_and_says_why(client: aioredis.Redis) -> None:
    pool_of(client, 1, 0.3)
    holding = asyncio.create_task(hold(client, 2))
    await asyncio.sleep(0.1)
    with pytest.raises(RedisConnectionError, match="all 1 connections to Redis stayed in use"):
        await client.get("k")
    assert await holding is None
    assert await client.get("k") is None  # the connection came back: usable again


async def test_a_waiter_that_gave_up_does_not_swallow_a_release(client: aioredis.Redis) -> None:
    pool = pool_of(client, 1, 0.1)
    holding = asyncio.create_task(hold(client, 0.4))
    await asyncio.sleep(0.05)
    with pytest.raises(RedisConnectionError):
        await client.get("gave-up")  # its place in the queue is left behind
    pool.timeout = 5
    assert await client.set("waited", 1)  # woken by the release, not by a timeout
    assert await holding is None


async def test_a_waiter_cancelled_as_it_is_woken_passes_the_connection_on(redis_url: str) -> None:
    fresh = await connect(redis_url, check=False)  # no connection made yet
    pool = pool_of(fresh, 0, HANG_GUARD_S)  # every command waits (a hang, not a time-out)
    try:
        first = asyncio.create_task(read(fresh, "first"))
        second = asyncio.create_task(read(fresh, "second"))
        await asyncio.sleep(0.05)
        pool.max_connections = 1
        pool._wake_one()  # a release wakes the first waiter...
        first.cancel()  # ...which is cancelled before it can take the connection
        # The second took it at once: had the release been lost, it would wait the pool's
        # whole time-out, and this guard would fail it.
        assert await asyncio.wait_for(second, HANG_GUARD_S / 2) is None
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        await fresh.aclose()
