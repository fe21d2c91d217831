"""Ollama stand-ins as processes of their own (``fake_ollama.py`` run as a program, as
the docker test runs it), so that a test can kill one with SIGKILL: its connections
reset and its port refuses, as when a GPU host dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from contreact_bus.local_redis import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class StandIn:
    url: str
    process: subprocess.Popen[str]

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)  # a hang guard only


@contextmanager
def stand_in_hosts(count: int, model: str, latency_s: float) -> Iterator[list[StandIn]]:
    """``count`` stand-ins on free ports, each holding ``model`` (the same digest on
    each), answering by themselves (a note written, then a reflection) after ``latency_s``."""
    hosts: list[StandIn] = []
    try:
        for _ in range(count):
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.fake_ollama", "--port", str(port),
                 "--model", model, "--latency", str(latency_s)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            assert process.stdout is not None
            line = process.stdout.readline()  # it prints once it listens
            assert "listening on" in line, line
            hosts.append(StandIn(f"http://127.0.0.1:{port}", process))
        yield hosts
    finally:
        for host in hosts:
            if host.process.poll() is None:
                host.process.terminate()
                host.process.wait(timeout=30)  # a hang guard only
