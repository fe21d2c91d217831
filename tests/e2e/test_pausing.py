"""Pause, resume and step end to end (issue 31), every service a process under `contreact
up`'s supervisor with its own Redis, the model the Ollama stand-in: a paused run makes
no model call while the orchestrator and Redis are killed and restarted under it, and
goes on when resumed; a stepping run makes one model call per `contreact step`; every
bad input one line."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fake_ollama import FakeOllama, running_fake_ollama
from tests.support.faults import QUICK_RECLAIM, answers
from tests.support.stack import Stack, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def one_line(proc: Any, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("contreact: error: "), line
    for needle in needles:
        assert needle in line, line


def config(tmp_path: Path, fake: FakeOllama, run_id: str, cycles: int) -> Path:
    path = tmp_path / f"{run_id}.yaml"
    data = {
        "run_id": run_id,
        "model_name": "llama3",
        "cycle_count": cycles,
        "backend": "ollama",
        "ollama_client_config": {"host": fake.host},
        "diversity": {"enabled": False},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def show(stack: Stack, run_id: str) -> dict[str, Any]:
    return dict(stack.json("show", run_id))


def resting(stack: Stack, run_id: str) -> bool:
    state = show(stack, run_id)
    return state["pending_task_id"] is None and state["phase"] in ("calling", "cycle_end")


def test_a_paused_run_survives_restarts_holding_nothing_then_goes_on(tmp_path: Path) -> None:
    with (
        running_fake_ollama(models=["llama3:latest"]) as fake,
        running_stack(tmp_path, None, env=QUICK_RECLAIM) as stack,
    ):
        fake.auto_reply = True
        fake.latency_s = 2.0  # (a slow model: the run is live when it is paused, at load too)
        stack.cli("run", str(config(tmp_path, fake, "pz-1", 6)), "--detach", check=True)
        stack.wait_until(lambda: show(stack, "pz-1")["cycle_number"] >= 1, what="cycle 1")
        paused = stack.cli("pause", "pz-1", "--reason", "a look", "--by", "ana", check=True)
        assert "run pz-1 paused" in paused.stdout
        stack.wait_until(lambda: resting(stack, "pz-1"), 60, "the run to rest")
        one_line(stack.cli("pause", "pz-1"), "paused already")
        one_line(stack.cli("step", "pz-1"), "not stepping", "--step")
        calls = len(fake.chat_requests())

        # The orchestrator killed (the supervisor restarts it), then Redis (restarted from
        # its append-only file): the rest is in the log, so nothing is sent meanwhile.
        os.kill(stack.pid_of("orchestrator"), signal.SIGKILL)
        time.sleep(3)
        os.kill(stack.pid_of("redis"), signal.SIGKILL)
        stack.wait_until(lambda: answers(stack.redis_url), 60, "Redis back")
        stack.wait_until(lambda: resting(stack, "pz-1"), 60, "the run read back")
        time.sleep(6)  # (longer than a lease and a reclaim: a stale task would be sent by now)
        assert len(fake.chat_requests()) == calls
        assert show(stack, "pz-1")["paused"] is True

        resumed = stack.cli("resume", "pz-1", check=True, timeout=120)
        assert "run pz-1 resumed" in resumed.stdout
        stack.wait_until(lambda: show(stack, "pz-1")["status"] == "completed", 180, "the end")
        assert show(stack, "pz-1")["cycle_number"] == 6
        assert stack.json("replay", "pz-1", "--check")["divergence"] is None
        assert stack.json("rebuild", "pz-1")["equal"] is True
        one_line(stack.cli("resume", "pz-1"), "has ended")
        one_line(stack.cli("pause", "nobody"), "nobody")

        # A stepping run: it rests before its first call; each step is one model call.
        fake.latency_s = 0.0
        before = len(fake.chat_requests())
        stepping = stack.start("run", str(config(tmp_path, fake, "st-1", 1)), "--step")
        stack.wait_until(lambda: stack.json("runs") and resting_new(stack, "st-1"), 60, "rest")
        assert len(fake.chat_requests()) == before  # no call before the first step
        for n in (1, 2):
            stack.cli("step", "st-1", check=True)
            stack.wait_until(lambda n=n: len(fake.chat_requests()) == before + n, 60, f"step {n}")
            stack.wait_until(lambda: resting(stack, "st-1") or ended(stack, "st-1"), 60, "rest")
        assert show(stack, "st-1")["status"] == "completed"  # a note, then the reflection
        out, _err = stepping.communicate(timeout=60)
        assert "run st-1 is stepping" in out and "completed" in out
        assert stack.json("replay", "st-1", "--check")["divergence"] is None


def resting_new(stack: Stack, run_id: str) -> bool:
    proc = stack.cli("show", run_id, "--json")
    return proc.returncode == 0 and resting(stack, run_id)


def ended(stack: Stack, run_id: str) -> bool:
    return bool(show(stack, run_id)["status"] == "completed")
