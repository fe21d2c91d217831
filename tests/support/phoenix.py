"""Arize Phoenix, the OTLP receiver users run (``phoenix serve``), as the trace tests'
receiver (issue 33): installed by ``deploy/otel-receiver.sh`` into a venv of its own
(``make test`` does it first; here it is done if it was not), started on free ports
with a working directory of its own, and read back through its own REST API."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.traced_runs import free_port

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / "build" / "otel-receiver-venv" / "bin" / "phoenix"
START_TIMEOUT_S = 600.0
"""Only guards a hang: Phoenix's first start migrates its database (tens of seconds on
a loaded machine)."""


@dataclass(frozen=True)
class Phoenix:
    url: str

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of the project, through ``GET /v1/projects/{project}/spans``."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
            path = f"/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}"
            with urllib.request.urlopen(self.url + path, timeout=60) as response:
                page = json.loads(response.read())
            out.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return out


def install_phoenix() -> Path:
    if not PHOENIX.exists():
        subprocess.run(["bash", str(ROOT / "deploy" / "otel-receiver.sh")], check=True)
    return PHOENIX


@contextlib.contextmanager
def running_phoenix(workdir: Path) -> Iterator[Phoenix]:
    binary = install_phoenix()
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("OTEL_")
    }
    env |= {
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(binary), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"phoenix serve exited: {(workdir / 'phoenix.log').read_text()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(url + "/healthz", timeout=5) as response,
            ):
                if response.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("phoenix serve did not answer")
            time.sleep(0.5)
        yield Phoenix(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


if __name__ == "__main__":  # `python -m tests.support.phoenix DIR`: one to look at by hand
    with running_phoenix(Path(sys.argv[1])) as running:
        print(running.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(1e9)
