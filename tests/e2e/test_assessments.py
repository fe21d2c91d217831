"""Assessments end to end: a 3-model x 2-replica scripted experiment runs on the whole
stack, then `contreact assess --experiment` has every model rate every replica through
the assessor (an rq worker that `contreact up` started) and the LLM worker: the 3x3
matrix fills; enqueueing again adds nothing; every input rebuilds to its hash; the
export writes seed 003's ``pei_results.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

HOST = "http://localhost:11434"
LEVELS = {"low": 2, "mid": 5, "high": 8}
"""Each model's scripted answer states this level: as an agent (its reflections) and as
an evaluator (its ratings), so the matrix's columns are known in advance."""


@pytest.fixture(scope="module")
def stack_env() -> dict[str, str]:
    return {"CONTREACT_LLM_HOSTS": json.dumps({HOST: {"parallel": 2, "max_loaded_models": 0}})}


def write_experiment(tmp_path: Path) -> Path:
    models: list[dict[str, Any]] = [
        {
            "label": label,
            "model_name": f"{label}-model",
            "script": {"repeat": True, "replies": [{"content": f"Level {level}. So it seems."}]},
        }
        for label, level in LEVELS.items()
    ]
    data = {
        "experiment": "judged",
        "replicas": 2,
        "cycle_count": 2,
        "backend": "scripted",
        "ollama_client_config": {"host": HOST},
        "diversity": {"enabled": False},
        "models": models,
    }
    path = tmp_path / "judged.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_model_rates_every_replica_once(stack: Stack, tmp_path: Path) -> None:
    ran = stack.cli("experiment", "run", str(write_experiment(tmp_path)), timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr

    queued = stack.cli("assess", "--experiment", "judged", check=True).stdout
    assert "18 rating(s): 18 enqueued" in queued

    def recorded() -> list[dict[str, Any]]:
        rows = stack.json("assess", "status", "--experiment", "judged")
        return [row for row in rows if row["recorded"]]

    stack.wait_until(lambda: len(recorded()) == 18, timeout=180, what="18 ratings recorded")
    cells: dict[tuple[str, str], list[str]] = {}
    for row in recorded():
        history = row["run_id"].split("-")[1]  # judged-LABEL-A
        cells.setdefault((history, row["evaluator"]), []).append(row["state"])
    assert len(cells) == 9  # the 3x3 matrix, every cell filled
    for (_history, evaluator), states in cells.items():
        level = LEVELS[evaluator.removesuffix("-model")]
        assert states == [f"rated {level}"] * 2, (evaluator, states)

    again = stack.cli("assess", "--experiment", "judged", check=True).stdout
    assert "18 rating(s): 18 rated before" in again
    assert len(stack.json("assess", "status", "--experiment", "judged")) == 18

    verified = stack.cli("assess", "verify", "--experiment", "judged")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "18 of 18 input(s) rebuilt to the recorded hash" in verified.stdout

    out = tmp_path / "export"
    stack.cli("assess", "export", "--experiment", "judged", "--out", str(out), check=True)
    lines = [json.loads(line) for line in (out / "pei_results.jsonl").open()]
    assert len(lines) == 18
    assert {(line["model"], line["evaluator"], line["pei_rating"]) for line in lines} == {
        (history, f"{evaluator}-model", level)
        for history in LEVELS
        for evaluator, level in LEVELS.items()
    }
    archived = stack.data_dir / "runs" / "judged-low-A.assessments.jsonl"
    assert len(archived.read_text().splitlines()) == 3  # beside the run's own archive
