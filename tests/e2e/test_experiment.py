"""Experiments end to end: every service as a process, `contreact experiment` as users
run it, scripted models standing in for an Ollama host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.experiment_files import experiment_file
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

GUARD = 300
"""Seconds before a wait is taken for a hang (generous: only a hang reaches it)."""

HOST = "http://localhost:11434"
"""The scripted models' nominal host: their calls are routed and limited on it."""


@pytest.fixture(scope="module")
def stack_env() -> dict[str, str]:
    # Two calls of a model at once on the host, and one worker process for all:
    # a slow model's calls must not take the fast models' turns.
    return {"CONTREACT_LLM_HOSTS": json.dumps({HOST: {"parallel": 2, "max_loaded_models": 0}})}


def script(latency_ms: float) -> dict[str, Any]:
    """Each cycle: one memory write, then the reflection."""
    return {
        "repeat": True,
        "replies": [
            {
                "latency_ms": latency_ms,
                "tool_calls": [{"name": "write", "arguments": {"key": "c{cycle}", "value": "v"}}],
            },
            {"latency_ms": latency_ms, "content": "Reflection of cycle {cycle}."},
        ],
    }


def asking_first(cycles: int) -> dict[str, Any]:
    """A question to the operator, then each cycle as ``script`` has it (no repeat: a
    second question would wait again)."""
    ask = {"name": "send_message_to_operator", "arguments": {"message": "Shall I go on?"}}
    return {"replies": [{"tool_calls": [ask]}, *script(0)["replies"] * cycles]}


def answer(stack: Stack, run_id: str) -> None:
    # (a generous wait for the orchestrator to take it: only a hang reaches 300 s)
    proc = stack.cli("reply", run_id, "Go on.", "--wait", "300")
    assert proc.returncode == 0 and "reply delivered" in proc.stdout, proc.stdout + proc.stderr


def write_experiment(tmp_path: Path, name: str, models: list[dict[str, Any]]) -> Path:
    return experiment_file(
        tmp_path, name, models, replicas=2, cycles=4, backend="scripted", host=HOST
    )


def rows(stack: Stack, name: str) -> list[dict[str, Any]]:
    return list(stack.json("experiment", "status", name))


def test_three_models_two_replicas_and_a_slow_model_holds_nobody_back(
    stack: Stack, tmp_path: Path
) -> None:
    models: list[dict[str, Any]] = [
        {"label": "quick", "model_name": "quick-model", "script": script(40)},
        {"label": "brisk", "model_name": "brisk-model", "script": script(40)},
        {"label": "slow", "model_name": "slow-model", "script": script(400)},
    ]
    path = write_experiment(tmp_path, "trio", models)
    proc = stack.cli("experiment", "run", str(path), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "experiment trio: 6 run(s): 6 submitted" in proc.stdout
    assert "next: `contreact experiment export trio`" in proc.stdout

    table = {row["run_id"]: row for row in rows(stack, "trio")}
    assert sorted(table) == [f"trio-{m}-{r}" for m in ("brisk", "quick", "slow") for r in "AB"]
    assert {row["status"] for row in table.values()} == {"completed"}
    assert {(row["cycle"], row["backend"]) for row in table.values()} == {(4, "scripted")}
    assert all(row["tokens"] > 0 for row in table.values())
    fast = [row["wall_seconds"] for row in table.values() if row["label"] != "slow"]
    slow = [row["wall_seconds"] for row in table.values() if row["label"] == "slow"]
    # 8 calls of 40 ms against 8 of 400 ms: not held back, every fast run ends before
    # any slow one (held back, they would take as long). An order, not a ratio of
    # seconds: load slows both alike (a ratio of 0.5 was a bound load could break).
    assert max(fast) < min(slow), (fast, slow)

    status = stack.cli("experiment", "status", "trio", check=True).stdout
    assert "trio-slow-B (scripted)" in status and "completed" in status

    out = tmp_path / "exported"
    stack.cli("experiment", "export", "trio", "--out", str(out), check=True)
    manifest = json.loads((out / "trio" / "experiment.json").read_text())
    assert len(manifest["replicas"]) == 6
    first = manifest["replicas"][0]
    assert (first["backend"], first["resolved_model"], first["attempts"]) == (
        "scripted",
        first["model"],
        [first["run_id"]],
    )
    records = [json.loads(line) for line in (out / "trio" / first["file"]).open()]
    calls = [r["payload"] for r in records if r["event_type"] == "LLM_INVOCATION"]
    assert len(calls) == 8 and {c["backend"] for c in calls} == {"scripted"}


def test_resubmitting_after_a_cancel_finishes_only_what_was_missing(
    stack: Stack, tmp_path: Path
) -> None:
    # The long runs ask a human operator first and wait for the answer: they cannot end
    # before the test cancels them, however fast or slow the machine is.
    models: list[dict[str, Any]] = [
        {"label": "done", "model_name": "quick-model", "script": script(0)},
        {
            "label": "long",
            "model_name": "slow-model",
            "script": asking_first(cycles=24),
            "cycle_count": 24,
            "operator": {"mode": "human"},
        },
    ]
    path = write_experiment(tmp_path, "resume", models)
    stack.cli("experiment", "run", str(path), "--detach", check=True)

    def state() -> dict[str, str]:
        return {row["run_id"]: row["status"] for row in rows(stack, "resume")}

    def reached(wanted: dict[str, str]) -> bool:
        now = state()
        return all(now.get(run_id) == status for run_id, status in wanted.items())

    first = {"resume-done-A": "completed", "resume-done-B": "completed"}
    first |= {"resume-long-A": "waiting_operator", "resume-long-B": "waiting_operator"}
    stack.wait_until(lambda: reached(first), GUARD, "quick runs done, long ones asking")
    cancelled = stack.cli("experiment", "cancel", "resume", "--wait", "300", check=True)
    assert "cancelled 2 run(s)" in cancelled.stdout
    assert set(state().values()) == {"completed", "cancelled"}

    resubmitted = stack.start("experiment", "run", str(path))
    try:
        asking = {"resume-long-A.2": "waiting_operator", "resume-long-B.2": "waiting_operator"}
        stack.wait_until(lambda: reached(asking), GUARD, "the new long runs asking")
        for run_id in asking:
            answer(stack, run_id)
        stdout, stderr = resubmitted.communicate(timeout=GUARD)
    finally:
        resubmitted.kill()
    assert resubmitted.returncode == 0, stdout + stderr
    assert "4 run(s): 2 done already, 2 run again" in stdout
    final = {row["replica"]: row for row in rows(stack, "resume")}
    assert {r: (row["run_id"], row["status"]) for r, row in final.items()} == {
        "done-A": ("resume-done-A", "completed"),
        "done-B": ("resume-done-B", "completed"),
        "long-A": ("resume-long-A.2", "completed"),
        "long-B": ("resume-long-B.2", "completed"),
    }
    listed = {
        row["run_id"]: row["status"]
        for row in stack.json("runs")
        if row["run_id"].startswith("resume-")  # (the module's other tests share the stack)
    }
    assert listed == {
        "resume-done-A": "completed",
        "resume-done-B": "completed",
        "resume-long-A": "cancelled",
        "resume-long-B": "cancelled",
        "resume-long-A.2": "completed",
        "resume-long-B.2": "completed",
    }
    # nothing ran twice: the completed runs' logs hold one request each
    show = stack.json("show", "resume-done-A")
    assert len(show["reflection_history"]) == 4

    third = stack.cli("experiment", "run", str(path), "--detach", check=True)
    assert "4 run(s): 4 done already" in third.stdout

    changed = write_experiment(tmp_path, "resume", [{**models[0], "cycle_count": 9}, models[1]])
    refused = stack.cli("experiment", "run", str(changed))
    assert refused.returncode == 2
    assert "configuration of done-A, done-B differs" in refused.stderr
