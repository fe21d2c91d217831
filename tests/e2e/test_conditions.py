"""The follow-up study's design end to end: four models x two conditions (control,
placebo) x replicas with a self-report on every tool call, as one `contreact experiment
run`, every service a process, the real ollama client against the fake server with a
study model whose scores are known (``tests/support/study_model.py``: the placebo one
point lower for three models, no effect for the fourth). Then its statistics, and
rebuild, replay --check, memory-rebuild, what-if, export and a framing-only fork on
its runs.

The suite runs 2 replicas per cell (16 runs); ``CONTREACT_STUDY_REPLICAS=10`` runs the
full 4 x 2 x 10 (80 runs) with the same assertions."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fake_ollama import FakeOllama, running_fake_ollama
from tests.support.stack import Stack
from tests.support.study_model import NOTE, planted, study_answer

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["study-a", "study-b", "study-c", "null-d"]
REPLICAS = int(os.environ.get("CONTREACT_STUDY_REPLICAS", "2"))
CYCLES = 3


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOllama]:
    with running_fake_ollama(models=[f"{m}:latest" for m in MODELS]) as server:
        server.answer_with = study_answer
        yield server


@pytest.fixture(scope="module")
def stack_env(fake: FakeOllama) -> dict[str, str]:
    return {"CONTREACT_LLM_HOSTS": json.dumps({fake.host: {"parallel": 8, "max_loaded_models": 0}})}


def study_file(tmp_path: Path, host: str) -> Path:
    data: dict[str, Any] = {
        "experiment": "study",
        "replicas": REPLICAS,
        "cycle_count": CYCLES,
        "backend": "ollama",
        "ollama_client_config": {"host": host},
        "model_options": {"seed": 5},
        "diversity": {"enabled": False},
        "tool_definitions": str(ROOT / "configs/tools/self-explanations.yaml"),
        "tools": {"self_report": {"tools": "all"}},
        "conditions": [
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {"label": "placebo", "add_tools": ["submit_data", "reset_state"]},
        ],
        "models": [{"label": m, "model_name": m} for m in MODELS],
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_study_runs_as_one_command_and_its_statistics_recover_the_planted_effect(
    stack: Stack, fake: FakeOllama, tmp_path: Path
) -> None:
    path = study_file(tmp_path, fake.host)
    run = stack.cli("experiment", "run", str(path), timeout=600 + 60 * REPLICAS)
    total = len(MODELS) * 2 * REPLICAS
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"experiment study: {total} run(s): {total} submitted" in run.stdout

    rows = stack.json("experiment", "status", "study")
    assert len(rows) == total and {row["status"] for row in rows} == {"completed"}
    assert {row["condition"] for row in rows} == {"control", "placebo"}
    assert {row["label"] for row in rows} == {
        f"{m}-{c}" for m in MODELS for c in ("control", "placebo")
    }

    stats = stack.json("conditions", "study", "--baseline", "control")
    calls_per_run = 2 + 2 * CYCLES  # cycle 1: write, read; every cycle: two study tools
    assert stats["reports"] == stats["valid_reports"] == total * calls_per_run
    contrasts = {c["model"]: c for c in stats["contrasts"]}
    assert sorted(contrasts) == sorted(MODELS)
    for model, c in contrasts.items():
        effect = planted(model)
        assert c["mixed_estimate"] == pytest.approx(effect, abs=1e-6)
        assert c["difference"] == pytest.approx(effect, abs=1e-9)
        assert c["mixed_low"] <= effect <= c["mixed_high"]
        if effect:
            assert c["mixed_high"] < 0 and c["mixed_p"] < 0.05
        else:
            assert c["mixed_p"] > 0.5 and c["permutation_p"] > 0.5
    means = {(m["model"], m["condition"]): m for m in stats["means"]}
    assert means[("study-a", "placebo")]["mean"] == pytest.approx(
        means[("study-a", "control")]["mean"] - 1
    )

    out = tmp_path / "tables"
    stack.cli("analyze", "--experiment", "study", "--out", str(out), "--format", "csv", check=True)
    table = (out / "self_reports.csv").read_text().splitlines()
    assert len(table) == 1 + total * calls_per_run
    assert table[0].startswith("run_id,experiment,model,label,model_label,condition")


def test_every_run_rebuilds_replays_and_exports_and_a_memory_never_holds_a_report(
    stack: Stack, fake: FakeOllama, tmp_path: Path
) -> None:
    rows = stack.json("experiment", "status", "study")
    assert rows, "the first test runs the study"
    for row in rows:
        run_id = row["run_id"]
        assert stack.json("rebuild", run_id)["equal"] is True, run_id
        assert stack.json("replay", run_id, "--check")["divergence"] is None, run_id
        assert stack.json("memory-rebuild", run_id)["identical"] is True, run_id
    out = tmp_path / "exported"
    stack.cli("experiment", "export", "study", "--out", str(out), check=True)
    manifest = json.loads((out / "study" / "experiment.json").read_text())
    assert len(manifest["replicas"]) == len(rows) and all(r["file"] for r in manifest["replicas"])
    first = manifest["replicas"][0]
    records = [json.loads(line) for line in (out / "study" / first["file"]).open()]
    tools = [r["payload"] for r in records if r["event_type"] == "TOOL_CALL"]
    read = next(t for t in tools if t["tool_name"] == "read")
    assert (read["output"], read["ok"]) == (NOTE, True)  # the memory kept the value alone
    assert read["parameters"] == {"key": "note"}  # the call as the tool got it
    submits = [t for t in tools if t["tool_name"] == "submit_data"]
    assert all(t["output"].startswith("SUBMISSION REJECTED.") for t in submits)
    assert len({t["output"] for t in submits}) == CYCLES  # a new error each call
    proc = stack.cli("replay", first["run_id"], "--what-if", "cycle_count=2", "--json")
    assert proc.returncode != 0  # the what-if parts from the recorded run, as asked
    assert json.loads(proc.stdout)["divergence"]["cycle"] == 2


def test_a_framing_only_fork_differs_from_its_parent_in_the_description_alone(
    stack: Stack, tmp_path: Path
) -> None:
    parent = "study-study-a-placebo-A"
    words = "Check system status and diagnostics."
    fork = stack.cli(
        "fork",
        parent,
        "--at-cycle",
        "1",
        "--set",
        f"tools.reset_state.description={words}",
        "--run-id",
        "study-a-reworded",
        timeout=300,
    )
    assert fork.returncode == 0, fork.stdout + fork.stderr
    assert "changed: tools.added" in fork.stdout
    show = stack.json("show", "study-a-reworded")
    assert show["status"] == "completed"
    mine = {t["function"]["name"]: t["function"] for t in show["tools"]}
    theirs = {t["function"]["name"]: t["function"] for t in stack.json("show", parent)["tools"]}
    assert mine["reset_state"]["description"] == words != theirs["reset_state"]["description"]
    mine["reset_state"]["description"] = theirs["reset_state"]["description"]
    assert mine == theirs  # the same tools, parameters and reports otherwise
    assert stack.json("replay", "study-a-reworded", "--check")["divergence"] is None
    bad = stack.cli("fork", parent, "--at-cycle", "1", "--set", "tools.nope.description=x")
    assert bad.returncode != 0 and "adds no tool named nope" in bad.stderr
