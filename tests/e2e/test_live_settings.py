"""`contreact set` end to end (issue 31): a live run's cycle count and step cap changed
mid-run with a reason, through every service as a process and the Ollama stand-in; the
change is in the log, the export and the run's page, and the run replays exactly; every
bad input one line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fake_ollama import running_fake_ollama
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

GUARD = 300
"""Seconds before a wait is taken for a hang (generous: only a hang reaches it)."""
WAIT = str(GUARD)
"""The same, for how long a control command waits for the orchestrator to take it."""


def one_line(proc: Any, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("contreact: error: "), line
    for needle in needles:
        assert needle in line, line


def page(stack: Stack, path: str) -> dict[str, Any]:
    base = f"http://127.0.0.1:{stack.env['CONTREACT_UI_PORT']}"
    try:
        with urllib.request.urlopen(f"{base}{path}", timeout=60) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError:  # (not projected yet)
        return {"run": {}}


def test_a_live_run_goes_on_longer_with_the_reason_recorded(stack: Stack, tmp_path: Path) -> None:
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        fake.auto_reply = True
        config = {
            "run_id": "set-1",
            "model_name": "llama3",
            "cycle_count": 3,
            "backend": "ollama",
            "ollama_client_config": {"host": fake.host},
            "diversity": {"enabled": False},
        }
        path = tmp_path / "set-1.yaml"
        path.write_text(yaml.safe_dump(config))
        # Stepping, the run makes the one model call each `step` grants and rests: it is
        # live, whatever the machine's speed, until the test resumes it.
        stack.cli("run", str(path), "--detach", "--step", check=True)
        stack.wait_until(lambda: stack.json("show", "set-1")["stepping"], GUARD, "stepping")
        stack.cli("step", "set-1", "--wait", WAIT, check=True)
        stack.wait_until(lambda: len(fake.chat_requests()) == 1, GUARD, "the stepped call")
        assert stack.json("show", "set-1")["cycle_number"] == 1
        changed = stack.cli(
            "set", "set-1", "cycle_count=5", "--reason", "the topic is not exhausted yet",
            "--by", "ana", "--wait", WAIT, check=True,
        )  # fmt: skip
        assert "run set-1: cycle_count 3 -> 5 changed" in changed.stdout
        assert "by ana: the topic is not exhausted yet" in changed.stdout

        # Refused by name, with the reason; a value the config refuses; nothing sent.
        one_line(
            stack.cli("set", "set-1", "model_name=other", "--reason", "r"),
            "model_name cannot change mid-run",
            "fork",
        )
        one_line(
            stack.cli("set", "set-1", "max_steps_per_cycle=0", "--reason", "r"),
            "max_steps_per_cycle",
            "greater than 0",
        )
        one_line(stack.cli("set", "nobody", "cycle_count=4", "--reason", "r"), "nobody")
        assert len(fake.chat_requests()) == 1  # (still resting after its one call)
        stack.cli("resume", "set-1", "--wait", WAIT, check=True)
        stack.wait_until(
            lambda: stack.json("show", "set-1")["status"] == "completed", GUARD, "the end"
        )
        one_line(stack.cli("set", "set-1", "cycle_count=9", "--reason", "r"), "has ended", "fork")
    shown = stack.json("show", "set-1")
    assert shown["cycle_number"] == 5 and shown["config"]["cycle_count"] == 5
    assert stack.json("rebuild", "set-1")["equal"] is True
    assert stack.json("replay", "set-1", "--check")["divergence"] is None
    assert stack.json("memory-rebuild", "set-1")["identical"] is True
    assert stack.json("replay", "set-1", "--what-if", "operator.auto_reply=x")["run_id"] == "set-1"
    stack.cli("export", "set-1", "--out", str(tmp_path / "x"), check=True)
    rows = [json.loads(line) for line in (tmp_path / "x" / "set-1.jsonl").open()]
    (record,) = [r for r in rows if r["event_type"] == "SETTINGS_CHANGED"]
    assert record["payload"] == {
        "changes": {"cycle_count": {"old": 3, "new": 5}},
        "by": "ana",
        "reason": "the topic is not exhausted yet",
    }
    stack.wait_until(
        lambda: page(stack, "/runs/set-1.json")["run"].get("status") == "completed",
        what="dashboard",
    )
    (row,) = page(stack, "/runs/set-1.json")["settings_changes"]
    assert row["by"] == "ana" and row["changes"] == [{"key": "cycle_count", "old": 3, "new": 5}]
