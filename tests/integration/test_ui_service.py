"""The ui service as a process: it serves what its projector reads from Redis, stops
cleanly on SIGTERM, is rebuilt with one command, and refuses a busy port in one line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from contreact_bus.local_redis import free_port
from contreact_bus.run_log import RunLog
from contreact_bus.runs import register_run
from contreact_events.names import SERVICES_HEARTBEAT
from contreact_ui.semantic import WAITS_FOR_WARM_UP
from tests.support.sim import Sim, make_config, say
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis


def env_for(redis_url: str, data_dir: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "CONTREACT_DATA_DIR": str(data_dir),
        "CONTREACT_UI_PORT": str(port),
        "CONTREACT_UI_POLL_S": "0.05",
    }


def get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return json.loads(response.read())


def until(predicate: Any, timeout: float = HANG_GUARD_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def seed_run(redis_url: str, run_id: str) -> int:
    """Register and append a finished 2-cycle run; return its number of events."""
    sim = Sim(make_config(run_id=run_id, cycle_count=2))
    sim.drive([say("Cycle done.")])

    async def write() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await register_run(client, run_id, None)
            await RunLog(client).append(run_id, sim.log)
        finally:
            await client.aclose()

    asyncio.run(write())
    return len(sim.log)


def test_the_service_follows_runs_and_stops_on_sigterm(redis_url: str, tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "contreact_ui"],
        env=env_for(redis_url, tmp_path / "data", port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        until(lambda: get(port, "/health.json")["ok"])
        seed_run(redis_url, "svc-1")
        until(lambda: get(port, "/runs/svc-1.json")["run"]["status"] == "completed")
        client = redis.Redis.from_url(redis_url)
        beats = {k.decode() for k in client.hkeys(SERVICES_HEARTBEAT)}
        client.close()
        assert any(name.startswith("ui:") for name in beats)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0  # a clean exit; the timeout only guards a hang
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "dashboard at http://127.0.0.1:" in (proc.stdout.read() if proc.stdout else "")


def test_sigterm_while_the_search_model_warms_up_is_a_clean_exit(
    redis_url: str, tmp_path: Path
) -> None:
    """The worst moment: the dashboard answers before its search model has warmed up
    (a thread loads it, then runs it once, in PyTorch). A SIGTERM then ended the
    process with SIGABRT: the interpreter finalized with that thread in PyTorch, which
    called ``std::terminate`` as the thread was ended. Here the warm-up is held in
    PyTorch until the service says it waits for it (or, without that wait, has died)."""
    port = free_port()
    entered, release = tmp_path / "entered", tmp_path / "release"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.ui_warm_hold"],
        env={
            **env_for(redis_url, tmp_path / "data", port),
            "CONTREACT_UI_WARM_SEARCH_MODEL": "true",
            "HOLD_ENTERED": str(entered),
            "HOLD_RELEASE": str(release),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        until(lambda: get(port, "/health.json")["ok"] and entered.exists())
        proc.send_signal(signal.SIGTERM)
        until(lambda: proc.poll() is not None or any(WAITS_FOR_WARM_UP in x for x in lines))
        release.touch()
        code = proc.wait(timeout=120)  # the timeout only guards a hang
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=HANG_GUARD_S)
    assert code == 0, "".join(lines)[-3000:]


def test_rebuild_is_one_command(redis_url: str, tmp_path: Path) -> None:
    events = seed_run(redis_url, "rb-1")
    result = subprocess.run(
        [sys.executable, "-m", "contreact_ui", "--rebuild"],
        env=env_for(redis_url, tmp_path / "data", free_port()),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"rebuilt the projections of 1 run(s) ({events} events)" in result.stdout
    assert (tmp_path / "data" / "ui.db").exists()


def test_a_busy_port_is_one_line_with_the_fix(redis_url: str, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "contreact_ui"],
            env=env_for(redis_url, tmp_path / "data", port),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"contreact-ui: error: cannot listen on 127.0.0.1:{port} (Address already in use): "
        "set CONTREACT_UI_PORT to a free port (or CONTREACT_UI_HOST to another address)"
    ]
