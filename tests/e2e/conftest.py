"""The whole stack as users run it: `contreact up` starts every service as its own
process against the session's Redis; commands run as subprocesses of the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Stack:
    env: dict[str, str]
    data_dir: Path
    workdir: Path

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

    def wait_until(self, predicate: Any, timeout: float = 60, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-3000:] for p in (self.data_dir / "logs").glob("*"))
                raise AssertionError(f"timed out waiting for {what}\n{logs}")
            time.sleep(0.1)


@pytest.fixture
def stack_env() -> dict[str, str]:
    """Extra environment of the services (a test module overrides this fixture)."""
    return {}


@pytest.fixture
def stack(redis_url: str, tmp_path: Path, stack_env: dict[str, str]) -> Iterator[Stack]:
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "CONTREACT_DATA_DIR": str(data_dir),
        "CONTREACT_ORCH_RECLAIM_IDLE_MS": "2000",
        **stack_env,
    }
    stack = Stack(env=env, data_dir=data_dir, workdir=tmp_path)
    stack.cli("up", check=True)
    try:
        yield stack
    finally:
        stack.cli("down")
