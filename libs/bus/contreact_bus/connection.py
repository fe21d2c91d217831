"""Connecting to Redis, with a clear error when it does not answer; commands packed
by hiredis."""

from __future__ import annotations

from typing import Any

import hiredis
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
    pool = client.connection_pool
    pool.connection_class = hiredis_packing(pool.connection_class)
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
