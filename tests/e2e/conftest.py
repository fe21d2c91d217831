"""The whole stack as users run it: `contreact up` starts every service as its own
process against the session's Redis; commands run as subprocesses of the real CLI."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import pytest
import redis

from tests.support.stack_env import DEFAULT_PORTS, stack_environment


@dataclass
class Stack:
    env: dict[str, str]
    data_dir: Path
    workdir: Path

    @property
    def redis_url(self) -> str:
        """The Redis this stack's services use (read from the data dir when `up`
        started its own)."""
        url = self.env.get("REDIS_URL")
        return url or (self.data_dir / "redis.url").read_text().strip()

    def cli(
        self, *args: str, timeout: float = 300, check: bool = False, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "contreact_cli", *args],
            env=self.env,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input_text,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"contreact {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "contreact_cli", *args],
            env=self.env,
            cwd=self.workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json", check=True).stdout)

    def pid_of(self, process: str) -> int:
        """The pid of a process `contreact up` supervises, as `status` reports it."""
        rows = self.json("status")["processes"]
        (row,) = [r for r in rows if r["process"] == process]
        return int(row["pid"])

    def wait_until(self, predicate: Any, timeout: float = 60, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-3000:] for p in (self.data_dir / "logs").glob("*"))
                raise AssertionError(f"timed out waiting for {what}\n{logs}")
            time.sleep(0.1)


@contextmanager
def running_stack(
    tmp_path: Path,
    redis_url: str | None,
    *up_args: str,
    env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """`contreact up` (with ``up_args``) in ``tmp_path/data``; `down` at the end. With
    ``redis_url`` None, `up` starts (and supervises) its own Redis on a free port."""
    data_dir = tmp_path / "data"
    full_env = stack_environment(data_dir, redis_url=redis_url, **(env or {}))
    stack = Stack(env=full_env, data_dir=data_dir, workdir=tmp_path)
    stack.cli("up", *up_args, check=True)
    try:
        yield stack
    finally:
        stack.cli("down")


@pytest.fixture(scope="session", autouse=True)
def default_ports_taken() -> Iterator[tuple[int, ...]]:
    """Every e2e test runs with the default ports (dashboard 8765, local Redis 6390)
    taken, as they are after `make demo`: a stack that would take one fails its test
    here, not only on the machine of a user whose demo still runs."""
    held = []
    for port in DEFAULT_PORTS:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:  # taken already (the user's demo, say): taken either way
            sock.close()
            continue
        held.append(sock)
    try:
        yield DEFAULT_PORTS
    finally:
        for sock in held:
            sock.close()


_DATABASES = itertools.count(1)


def own_database(redis_server: str) -> str:
    """The session's Redis with a database of its own (1-15, flushed), for a stack that
    outlives one test: the tests' own ``redis_url`` (database 0) is flushed per test."""
    number = next(_DATABASES) % 15 + 1
    url = urlunparse(urlparse(redis_server)._replace(path=f"/{number}"))
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture(scope="module")
def stack_env() -> dict[str, str]:
    """Extra environment of the module's services (a test module overrides this)."""
    return {}


@pytest.fixture(scope="module")
def stack(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory, stack_env: dict[str, str]
) -> Iterator[Stack]:
    """One `contreact up` for a test module (its tests use their own run ids): starting
    every service, the embedder's model included, is most of an e2e test's time."""
    workdir = tmp_path_factory.mktemp("stack")
    with running_stack(workdir, own_database(redis_server), env=stack_env) as running:
        yield running
