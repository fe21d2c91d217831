"""Connecting to Redis, with a clear error when it does not answer; commands packed
by hiredis; a command that finds every connection of the pool in use waits for one."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import MasterNotFoundError, SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError
from redis.exceptions import TimeoutError as RedisTimeoutError

from contreact_bus.backoff import REDIS_DOWN, Backoff
from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.failover.address import RedisAddress, redis_client, sentinel_diagnosis

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
MAX_CONNECTIONS = 256
"""Connections one client (one service process) opens at most."""
CONNECTION_WAIT_S = 30.0
"""How long a command waits for a connection while all ``MAX_CONNECTIONS`` are in use
before it fails with a ``ConnectionError`` that says so."""


async def connect(
    address: RedisAddress | str, *, check: bool = True, wait: bool = False
) -> aioredis.Redis:
    """An asyncio client (bytes in, bytes out) of ``address`` (a URL, or the primary
    its sentinels name: ``contreact_bus.failover.address``). With ``check``, PING it first; with
    ``wait`` (services), keep trying with backoff until Redis answers, however long
    that takes, instead of failing (a service started before Redis, or during its
    restart, carries on once it is up).

    The pool is a ``WaitingConnectionPool``: redis-py's default pool raises
    ``MaxConnectionsError`` for the 101st command in flight at once, which an LLM worker
    running 200 calls met at every wave of their gate checks (each failed call then
    waited, pending, for its entry to be claimed again: seconds to tens of seconds,
    issue 20). Here such a command waits for a connection to come back instead."""
    if isinstance(address, str):
        address = RedisAddress(address)
    client: aioredis.Redis = redis_client(  # the client owns its pool: aclose() closes it
        address,
        asyncio=True,
        pool_class=WaitingSentinelPool if address.through_sentinels else WaitingConnectionPool,
        connection_wrapper=hiredis_packing,
        max_connections=MAX_CONNECTIONS,
        timeout=CONNECTION_WAIT_S,
        decode_responses=False,
        health_check_interval=30,
        socket_keepalive=True,
        socket_connect_timeout=5,
    )
    if wait:
        backoff = Backoff(f"connecting to {address.describe()}", first=0.2, log_every_s=10.0)
        while True:
            try:
                await client.ping()
                backoff.reset()
                return client
            except MasterNotFoundError:  # say why: no sentinel answers, or a wrong name
                why = await asyncio.to_thread(sentinel_diagnosis, address)
                await backoff.wait(RedisUnavailable(why))
            except REDIS_DOWN as exc:
                await backoff.wait(exc)
    if check:
        try:
            await client.ping()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            await client.aclose()
            if address.through_sentinels:
                raise RedisUnavailable(sentinel_diagnosis(address)) from None
            raise RedisUnavailable(
                f"Redis does not answer at {address.describe()} ({exc}). Start the services "
                "with `contreact up`, or set REDIS_URL to a running Redis."
            ) from None
    return client


class _Waiting:
    """redis-py's asyncio pool, except that a command finding all ``max_connections``
    in use waits (up to ``timeout`` seconds) for one to be released, instead of failing
    with ``MaxConnectionsError``. The path with a connection free is the plain pool's:
    redis-py's own ``BlockingConnectionPool`` takes a lock and a condition on every
    command and every release, which cost 30% more client CPU per command (HMGET: 81.5
    against 62.8 us, median of 5 x 10,000; this pool 65.0 us) on the services' hot path."""

    max_connections: int

    def __init__(self, *args: Any, timeout: float = CONNECTION_WAIT_S, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout = timeout
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            try:
                return await super().get_connection()  # type: ignore[misc]
            except MaxConnectionsError:
                pass
            freed = loop.create_future()
            self._waiting.append(freed)
            try:
                async with asyncio.timeout_at(deadline):
                    await freed
            except BaseException as exc:  # ran out of time, or cancelled: it gives up
                if freed.done() and not freed.cancelled():
                    self._wake_one()  # woken as it gave up: the release goes to the next
                freed.cancel()  # still queued: skipped by the next release
                if isinstance(exc, TimeoutError):
                    raise RedisConnectionError(
                        f"No connection available: all {self.max_connections} connections "
                        f"to Redis stayed in use for {self.timeout:g} s"
                    ) from None
                raise

    async def release(self, connection: Any) -> None:
        await super().release(connection)  # type: ignore[misc]
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiting:  # the longest waiter still waiting
            freed = self._waiting.popleft()
            if not freed.done():
                freed.set_result(None)
                break


class WaitingConnectionPool(_Waiting, aioredis.ConnectionPool):
    """The waiting pool of a Redis reached by its URL."""


class WaitingSentinelPool(_Waiting, SentinelConnectionPool):
    """The waiting pool of the primary the sentinels name (redis-py's own sentinel pool:
    each new connection asks them where the primary is)."""


_PACKING: dict[type[Any], type[Any]] = {}


def hiredis_packing(base: type[Any]) -> type[Any]:
    """``base`` (plain, TLS or Unix socket connection) packing commands with hiredis's
    C packer. redis-py's asyncio connection packs every argument in Python (type checks,
    encoding, a join per argument): a tenth of a service's CPU per step, the largest
    single item in the orchestrator's profile (issue 20). Same bytes on the wire;
    anything hiredis does not take (a bool, a memoryview) goes to redis-py's own
    packer, which raises its usual ``DataError`` where it should."""

    if base in _PACKING or base in _PACKING.values():
        return _PACKING.get(base, base)

    class HiredisPacking(base):  # type: ignore[misc]
        def pack_command(self, *args: Any) -> list[bytes]:
            head = args[0]
            if isinstance(head, str):
                args = (*head.encode().split(), *args[1:])
            elif b" " in head:
                args = (*head.split(), *args[1:])
            try:
                return [hiredis.pack_command(args)]
            except TypeError:
                return list(super().pack_command(*args))

    HiredisPacking.__name__ = HiredisPacking.__qualname__ = f"HiredisPacking{base.__name__}"
    _PACKING[base] = HiredisPacking
    return HiredisPacking
