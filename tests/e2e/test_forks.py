"""Forks end to end: every service as a process, `contreact fork` and an experiment
file's ``fork`` section as users run them, scripted models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.bus_run import REPLIES
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def records(stack: Stack, run_id: str, out: Path) -> list[dict[str, Any]]:
    stack.cli("export", run_id, "--out", str(out), check=True)
    return [json.loads(line) for line in (out / f"{run_id}.jsonl").open()]


def checks_pass(stack: Stack, run_id: str, *memory_of: str) -> None:
    """rebuild equals live, replay --check passes, memory-rebuild is identical."""
    rebuild = stack.json("rebuild", run_id)
    assert rebuild["equal"] is True, rebuild
    replay = stack.json("replay", run_id, "--check")
    assert replay["divergence"] is None, replay
    memory = stack.json("memory-rebuild", run_id, *memory_of)
    assert memory["identical"] is True, memory


def test_contreact_fork_continues_with_the_parents_memory(stack: Stack, tmp_path: Path) -> None:
    config = {
        "run_id": "e2e-parent",
        "model_name": "model-a",
        "cycle_count": 6,
        "backend": "scripted",
        "script": {"replies": REPLIES, "repeat": True},
        "diversity": {"enabled": False},
    }
    path = tmp_path / "parent.yaml"
    path.write_text(yaml.safe_dump(config))
    stack.cli("run", str(path), check=True)

    refused = stack.cli("fork", "e2e-parent", "--at-cycle", "6")
    assert refused.returncode != 0
    assert refused.stderr.count("\n") == 1 and "cycle_count above 6" in refused.stderr

    fork = stack.cli(
        "fork", "e2e-parent", "--at-cycle", "3", "--model", "model-b", "--run-id", "e2e-child"
    )
    assert fork.returncode == 0, fork.stdout + fork.stderr
    assert "run e2e-child forked from e2e-parent at cycle 3 (changed: model_name)" in fork.stdout
    assert "run e2e-child completed: 6 cycle(s)" in fork.stdout

    logged = records(stack, "e2e-child", tmp_path / "logs")
    assert sum(r["event_type"] == "CYCLE_START" for r in logged) == 6
    reads = [
        r["payload"]
        for r in logged
        if r["event_type"] == "TOOL_CALL" and r["payload"]["tool_name"] == "read"
    ]
    assert [(t["output"], t["ok"]) for t in reads] == [("from cycle 2", True)]
    checks_pass(stack, "e2e-child", "e2e-parent")
    show = stack.json("show", "e2e-child")
    assert show["status"] == "completed"

    again = stack.cli("fork", "e2e-parent", "--at-cycle", "3", "--run-id", "e2e-child")
    assert again.returncode != 0 and "already exists" in again.stderr


def test_the_papers_swap_as_an_experiment_file(stack: Stack, tmp_path: Path) -> None:
    """2 models x 2 replicas, each forked at its last cycle to the other model."""
    data = {
        "experiment": "swap",
        "replicas": 2,
        "cycle_count": 3,
        "backend": "scripted",
        "script": {
            "repeat": True,
            "replies": [
                {"tool_calls": [{"name": "write", "arguments": {"key": "c{cycle}", "value": "v"}}]},
                {"content": "Reflection of cycle {cycle}."},
            ],
        },
        "operator": {"mode": "auto"},
        "diversity": {"enabled": False},
        "models": [
            {"label": "A", "model_name": "model-a"},
            {"label": "B", "model_name": "model-b"},
        ],
        "fork": {"at_cycle": 3, "cycle_count": 5},
    }
    path = tmp_path / "swap.yaml"
    path.write_text(yaml.safe_dump(data))
    proc = stack.cli("experiment", "run", str(path), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "experiment swap: 4 run(s): 4 submitted" in proc.stdout

    rows = {row["run_id"]: row for row in stack.json("experiment", "status", "swap")}
    parents = [f"swap-{m}-{r}" for m in "AB" for r in "AB"]
    forks = [f"{p}-to-{'B' if p.startswith('swap-A') else 'A'}" for p in parents]
    assert sorted(rows) == sorted(parents + forks)
    assert {rows[p]["status"] for p in parents + forks} == {"completed"}
    assert {rows[p]["cycle"] for p in parents} == {3}
    assert {rows[f]["cycle"] for f in forks} == {5}
    for fork in forks:
        show = stack.json("show", fork)
        assert show["config"]["model_name"] == ("model-b" if "-A-" in fork[:8] else "model-a")
    checks_pass(stack, "swap-A-A-to-B", "swap-A-A")
    logged = records(stack, "swap-B-B-to-A", tmp_path / "logs")
    assert sum(r["event_type"] == "CYCLE_START" for r in logged) == 5

    again = stack.cli("experiment", "run", str(path), timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 done already" in again.stdout and "0 sent" in again.stdout
