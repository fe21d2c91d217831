"""A redis-server process of our own: for `contreact up` (with an append-only file),
and for the tests and benchmarks (on a free port, keeping nothing)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.failover.address import RedisAddress, redis_client

INSTALL_HINT = (
    "install it (Debian/Ubuntu: `sudo apt-get install redis-server`; macOS: "
    "`brew install redis`) or set REDIS_URL to a running Redis"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server_argv(port: int, workdir: Path, *, appendonly: bool) -> list[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable(f"redis-server is not installed: {INSTALL_HINT}")
    persistence = (
        ["--appendonly", "yes", "--appendfsync", "everysec"]
        if appendonly
        else ["--appendonly", "no"]
    )
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(workdir),
        "--save",
        "",
        *persistence,
    ]


def answers(address: RedisAddress | str) -> bool:
    """Whether Redis (at a URL, or the primary its sentinels name) answers a PING now."""
    if isinstance(address, str):
        address = RedisAddress(address)
    client = redis_client(address, asyncio=False, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError, OSError):
        return False
    finally:
        client.close()


def wait_until_answers(url: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not answers(url):
        if time.monotonic() > deadline:
            raise RedisUnavailable(f"redis-server did not answer at {url} within {timeout_s} s")
        time.sleep(0.05)


@contextlib.contextmanager
def running_redis_server(workdir: Path) -> Iterator[str]:
    """A throwaway redis-server on a free port in ``workdir``; yields its URL."""
    port = free_port()
    proc = subprocess.Popen(
        redis_server_argv(port, workdir, appendonly=False),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until_answers(url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
