"""Spend end to end: a run on the OpenAI-compatible stand-in that reports each call's
cost stops at its budget within one call; an experiment's plan, made before anything
runs, is within 25% of what its scripted runs then record; an experiment's budget stops
it starting runs, and says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai.log import read_eval_log

from tests.support.fake_openai import FakeOpenAI, running_fake_openai
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

MODEL = "meta-llama/llama-3.3-70b-instruct"
HOST = "http://localhost:11434"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai([MODEL]) as server:
        yield server


def test_a_run_stops_at_its_budget_within_one_call_on_the_providers_figures(
    stack: Stack, fake: FakeOpenAI, tmp_path: Path
) -> None:
    for n in range(8):  # never a reflection: only the budget ends the cycle
        fake.reply("", [("write", {"key": f"k{n}", "value": "v"})], cost=0.01)
    config = {
        "run_id": "e2e-budget",
        "model_name": MODEL,
        "cycle_count": 2,
        "backend": "openai",
        "openai_client_config": {"base_url": fake.base_url, "api_key_env": None},
        "diversity": {"enabled": False},
        "budget": {"cost": 0.025},
        "prices": {"some/other-model": {"input": 1, "output": 2}},
    }
    path = tmp_path / "budget.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = stack.cli("run", str(path), timeout=240)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # it did not complete
    missing = [line for line in proc.stderr.splitlines() if "no price for model" in line]
    assert len(missing) == 1 and f"'{MODEL}'" in missing[0]
    assert "run e2e-budget stopped: budget: cost 0.03 USD reached the budget of 0.025 USD" in (
        proc.stdout
    )
    assert len(fake.chat_requests()) == 3  # 0.01, 0.02, 0.03: the third reached it

    show = stack.json("show", "e2e-budget")
    assert show["status"] == "stopped"
    assert show["spent_cost"] == pytest.approx(0.03) and show["uncosted_calls"] == 0
    assert show["stop_reason"].startswith("budget: cost 0.03 USD")
    text = stack.cli("show", "e2e-budget", check=True).stdout
    assert "spend: $0.0300 USD" in text and "budget 0.025 USD" in text
    listed = {row["run_id"]: row for row in stack.json("runs")}["e2e-budget"]
    assert listed["status"] == "stopped"
    assert listed["failure_reason"].startswith("stopped: budget: cost 0.03 USD")


def script(words: int) -> dict[str, Any]:
    """Each cycle: one memory write, then a reflection of ``words`` words."""
    reflection = " ".join(["Cycle {cycle} taught me something about gaps between primes."] * words)
    return {
        "repeat": True,
        "replies": [
            {"tool_calls": [{"name": "write", "arguments": {"key": "c{cycle}", "value": "v"}}]},
            {"content": reflection},
        ],
    }


def write_experiment(tmp_path: Path, name: str, **extra: Any) -> Path:
    data = {
        "experiment": name,
        "replicas": 2,
        "cycle_count": 5,
        "backend": "scripted",
        "ollama_client_config": {"host": HOST},
        "operator": {"mode": "auto"},
        "diversity": {"enabled": False},
        "prices": {
            "terse-model": {"input": 3.0, "output": 15.0},
            "wordy-model": {"input": 0.5, "output": 1.5},
        },
        "models": [
            {"label": "terse", "model_name": "terse-model", "script": script(2)},
            {"label": "wordy", "model_name": "wordy-model", "script": script(12)},
        ],
        **extra,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_plan_is_within_a_quarter_of_what_the_scripted_runs_record(
    stack: Stack, tmp_path: Path
) -> None:
    path = write_experiment(tmp_path, "planned")
    plan = stack.json("experiment", "plan", str(path))
    text = stack.cli("experiment", "plan", str(path), check=True).stdout
    assert "assumptions:" in text and "4 characters a token" in text
    assert plan["unpriced_runs"] == 0 and len(plan["runs"]) == 4

    proc = stack.cli("experiment", "run", str(path), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "spend terse:" in proc.stdout and "spend in all:" in proc.stdout
    recorded = {row["run_id"]: row for row in stack.json("experiment", "status", "planned")}
    for run in plan["runs"]:
        row = recorded[run["run_id"]]
        assert row["status"] == "completed"
        assert run["calls"] == 10  # the script's: two calls a cycle, five cycles
        assert abs(run["tokens"] - row["tokens"]) <= 0.25 * row["tokens"], (run, row)
        assert row["uncosted_calls"] == 0
        assert abs(run["cost"] - row["cost"]) <= 0.25 * row["cost"], (run, row)
    total = sum(row["cost"] for row in recorded.values())
    assert abs(plan["cost"] - total) <= 0.25 * total

    # the same runs as Inspect logs: one per model, the replicas as epochs, the spend kept
    out = tmp_path / "inspect"
    stack.cli(
        "experiment", "export", "planned", "--format", "inspect", "--out", str(out), check=True
    )
    logs = {p.name: read_eval_log(str(p)) for p in sorted((out / "planned").glob("*.eval"))}
    assert sorted(logs) == ["planned_terse-model.eval", "planned_wordy-model.eval"]
    for log in logs.values():
        for sample in log.samples or []:
            row = recorded[sample.metadata["run_id"]]
            (usage,) = sample.model_usage.values()
            assert usage.total_tokens == row["tokens"]
            assert usage.total_cost == pytest.approx(row["cost"], abs=1e-6)  # the row rounds
            assert sample.epoch == "AB".index(row["letter"]) + 1


def test_an_experiments_budget_stops_it_starting_runs_and_says_so(
    stack: Stack, tmp_path: Path
) -> None:
    path = write_experiment(
        tmp_path, "capped", parallel=1, experiment_budget={"tokens": 100}, replicas=1
    )
    proc = stack.cli("experiment", "run", str(path), timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 run(s) wait their turn (parallel: 1, budget permitting)" in proc.stdout
    said = [line for line in proc.stderr.splitlines() if "its budget is reached" in line]
    assert len(said) == 1, proc.stderr
    assert "1 run(s) not started: capped-wordy-A" in said[0]
    statuses = {
        row["run_id"]: row["status"] for row in stack.json("experiment", "status", "capped")
    }
    assert statuses == {"capped-terse-A": "completed"}  # the other one never started
    again = stack.cli("experiment", "run", str(path), timeout=120)
    assert again.returncode == 1 and "its budget is reached" in again.stderr
    assert (
        json.loads(stack.cli("experiment", "status", "capped", "--json").stdout)[0]["status"]
        == "completed"
    )
