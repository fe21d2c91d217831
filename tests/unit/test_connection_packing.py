"""The services' connections pack commands with hiredis (issue 20): the same bytes on
the wire as redis-py's own packer, for every kind of argument the platform sends, and
the same error for what Redis cannot take."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import DataError

from contreact_bus.connection import hiredis_packing

COMMANDS: list[tuple[Any, ...]] = [
    ("PING",),
    ("SET", "key", "value"),
    ("CONFIG GET", "maxmemory"),
    (b"SCRIPT LOAD", b"return 1"),
    ("XADD", "run:{r1}", "MAXLEN", "~", 100_000, "*", "msg", b'{"a":"\xc3\xa9"}' * 5000),
    ("HSET", "h", "f", "caf\u00e9 \u202e \U0001f600", "n", 2**70, "x", -3),
    ("ZADD", "z", 1795792505.1234567, "m", 0.1, "n", 1e20, "o", float("inf")),
    ("EVAL", "return ARGV[1]", 0, memoryview(b"a view"), bytearray(b"an array")),
]


def wire(packed: list[bytes]) -> bytes:
    return b"".join(bytes(part) for part in packed)


@pytest.mark.parametrize("base", [aioredis.Connection, aioredis.UnixDomainSocketConnection])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_the_same_bytes_as_redis_py_packs(base: type[Any], command: tuple[Any, ...]) -> None:
    packing = hiredis_packing(base)
    assert issubclass(packing, base) and hiredis_packing(base) is packing
    assert wire(packing().pack_command(*command)) == wire(base().pack_command(*command))


def test_what_redis_cannot_take_is_refused_as_before() -> None:
    with pytest.raises(DataError, match="bool"):
        hiredis_packing(aioredis.Connection)().pack_command("SET", "k", True)
