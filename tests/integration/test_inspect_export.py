"""Runs as Inspect logs: a scripted experiment (two models, two replicas, a fork of its
file, PEI ratings) exported with ``contreact export RUN... --format inspect`` reads back
through inspect_ai's own ``read_eval_log`` into the numbers the dashboard shows for the
same runs: tokens, cost, LLM calls, tool calls, cycles, reflections, the PEI cells and
the agreement figure."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from inspect_ai.log import EvalLog, read_eval_log

from contreact_cli.main import main
from tests.support.inspect_runs import FORK, RATINGS, REPLICAS, archived_experiment
from tests.support.ui_client import app_client, get

pytestmark = [pytest.mark.redis]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return archived_experiment(tmp_path_factory.mktemp("inspect-export"))


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient]:
    with app_client(data_dir) as test_client:
        yield test_client


def export(
    data_dir: Path, out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, EvalLog]:
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # none: the archive alone
    with pytest.raises(SystemExit) as exited:
        main(["export", *REPLICAS, FORK, "--format", "inspect", "--out", str(out)])
    printed = capsys.readouterr()
    assert exited.value.code in (0, None), printed
    assert f"open them with `inspect view --log-dir {out}`" in printed.out
    return {path.name: read_eval_log(str(path)) for path in sorted(out.glob("*.eval"))}


def test_the_eval_files_read_back_into_the_dashboards_numbers(
    data_dir: Path,
    client: TestClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    read = export(data_dir, tmp_path / "inspect", monkeypatch, capsys)
    assert sorted(read) == ["insp_m-gpt5.eval", "insp_m-opus.eval"]  # one per model
    samples: dict[str, Any] = {}
    for log in read.values():
        assert log.status == "success"
        for sample in log.samples or []:
            samples[sample.metadata["run_id"]] = (log, sample)
    assert sorted(samples) == sorted([*REPLICAS, FORK])

    for run_id, (log, sample) in samples.items():
        page = get(client, f"/runs/{run_id}.json")
        row = page["run"]
        assert log.eval.model == row["model"]
        usage = sample.model_usage[row["resolved_model"] or row["model"]]
        model_events = [e for e in sample.events if e.event == "model"]
        tool_events = [e for e in sample.events if e.event == "tool"]
        if run_id == FORK:  # its own calls count; the copied prefix's events are there too
            (branch,) = [e for e in sample.events if e.event == "branch"]
            assert branch.from_anchor == "insp-GPT5-A/c1"
            own = model_events[sum(1 for e in sample.events[: sample.events.index(branch)]
                                   if e.event == "model"):]  # fmt: skip
            assert len(own) == 3
            assert sample.id == "fork of GPT5 at 1" and sample.epoch == 1
        else:
            assert len(model_events) == row["llm_calls"] == 6
            assert usage.input_tokens == row["prompt_tokens"]
            assert usage.output_tokens == row["completion_tokens"]
            assert usage.total_cost == pytest.approx(row["cost"])
            assert sample.metadata["cost"] == pytest.approx(row["cost"])
            assert sample.id == run_id.split("-")[1] and sample.epoch == "AB".index(run_id[-1]) + 1
        cycles = page["cycles"]
        # the dashboard shows a fork's copied cycle too, as the sample's events do
        assert len(tool_events) == sum(c["metrics"]["tool_calls"] for c in cycles)
        spans = [e.name for e in sample.events if e.event == "span_begin"]
        assert spans == [f"cycle {c}" for c in range(1, 3)]
        reflections = [c["reflection"] for c in cycles]
        assert sample.metadata["reflections"] == reflections
        called = {
            c.id for m in sample.messages if m.role == "assistant" for c in m.tool_calls or ()
        }
        answered = [m.tool_call_id for m in sample.messages if m.role == "tool"]
        assert len(answered) == len(called) and set(answered) == called  # each result its call
        said = [m.text for m in sample.messages if m.role == "assistant" and m.text]
        assert said == reflections  # the whole history: every reflection in its place
        operator = [e.data for e in sample.events if e.event == "info" and e.source == "operator"]
        assert [d.get("agent") for d in operator if "agent" in d] == ["Is anyone there?"] * 2
        assert sum(e.event == "anchor" for e in sample.events) == 2  # one per cycle end
        first = model_events[0]
        assert first.input[0].role == "system" and {t.name for t in first.tools} >= {"write"}

    table = get(client, "/compare.json?experiment=insp")["assessments"]["matrix"]["pei"]
    cells = {(c["history"], c["evaluator"]): c["mean"] for c in table["cells"]}
    for run_id in RATINGS:
        _log, sample = samples[run_id]
        assert sample.scores["pei"].value == {
            "GPT5": RATINGS[run_id]["m/gpt5"],
            "Opus": RATINGS[run_id]["m/opus"],
        }
    by_history: dict[tuple[str, str], list[float]] = {}
    for run_id, by in RATINGS.items():
        for evaluator, value in by.items():
            key = (run_id.split("-")[1], {"m/gpt5": "GPT5", "m/opus": "Opus"}[evaluator])
            by_history.setdefault(key, []).append(value)
    assert cells == {k: sum(v) / len(v) for k, v in by_history.items()}
    alpha = table["agreement"]["alpha"]["alpha"]
    for log in read.values():
        (score,) = log.results.scores
        assert score.name == "pei"
        assert score.metrics["krippendorff_alpha"].value == pytest.approx(alpha)


def test_without_inspect_ai_the_export_says_how_to_install_it_in_one_line(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real_import = builtins.__import__

    def no_inspect(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("inspect_ai"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_inspect)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data_dir))
    with pytest.raises(SystemExit) as exited:
        main(["export", "insp-GPT5-A", "--format", "inspect", "--out", str(tmp_path / "x")])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "contreact: error: inspect_ai is not installed: `pip install 'contreact-cli[inspect]'` "
        "(or `pip install inspect-ai`), then export again"
    ]
    assert not (tmp_path / "x").exists()
