"""The whole stack as users run it, for the end-to-end and browser tests: `contreact
up` starts every service as its own process; commands run as subprocesses of the
real CLI. The fixtures that hold a stack for a module are in ``tests/e2e/conftest.py``."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import redis

from tests.support.stack_env import stack_environment


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
        """Poll ``predicate`` until it holds (``timeout`` only guards a hang). Between
        two polls it sleeps as long as the last poll took (0.1 to 1 s): a predicate
        that runs the CLI (0.8 CPU-s a start) then takes at most half a core, not all
        of one, while the services it waits for need the machine."""
        deadline = time.monotonic() + timeout
        while True:
            started = time.monotonic()
            if predicate():
                return
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-3000:] for p in (self.data_dir / "logs").glob("*"))
                raise AssertionError(f"timed out waiting for {what}\n{logs}")
            time.sleep(min(1.0, max(0.1, time.monotonic() - started)))


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
