"""Benchmarks as today's figures: ``--record`` appends each verdict and figure to the
results file with its commit, machine and date; ``docs/benchmarks.md`` shows the latest
line of each; a smoke run is never recorded; the two retired targets print figures,
never a verdict."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench._support import figure, use_smoke_sizes, verdict
from bench._support import results as bench_results
from bench._support.results import FIELDS, latest, read_results
from tools.docs_gen import bench_page

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def recording(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    bench_results.start_recording(path)
    yield path
    bench_results.stop_recording()


def test_a_recorded_run_appends_each_verdict_and_figure(recording: Path) -> None:
    verdict("log growth", True, "1.02x (<= 1.10x)", value=1.0213, unit="x", target="<= 1.10x")
    verdict("text check", False, "250 ms (< 200 ms)", value=250.0, unit="ms", target="< 200 ms")
    figure("rebuild speed / baseline speed", 0.25, "x", "no target: retired")
    rows = read_results(recording)
    assert [(r["metric"], r["value"], r["verdict"]) for r in rows] == [
        ("log growth", 1.0213, "PASS"),
        ("text check", 250.0, "FAIL"),
        ("rebuild speed / baseline speed", 0.25, "figure"),
    ]
    for row in rows:
        assert set(row) == set(FIELDS)
        assert row["commit"] and row["machine"].startswith(f"{os.cpu_count()} cpu")
        assert row["date"].endswith(" UTC")


def test_without_record_nothing_is_written(capsys: pytest.CaptureFixture[str]) -> None:
    verdict("log growth", True, "fine", value=1.0, unit="x", target="<= 1.1x")
    assert capsys.readouterr().out == "PASS: log growth: fine\n"
    assert not bench_results._recording


def test_a_smoke_run_is_never_recorded(recording: Path) -> None:
    with pytest.raises(SystemExit, match="--record with --smoke"):
        use_smoke_sizes({"SIZE": 10}, SIZE=1)
    assert not recording.exists()


def test_a_benchmark_run_with_record_appends_its_verdict(tmp_path: Path) -> None:
    """`python -m bench.log.log_growth --record` (about a second at full size) appends
    its verdict, named after the module, to the results file."""
    path = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.log.log_growth", "--record"],
        cwd=ROOT,
        env={**os.environ, bench_results.RESULTS_ENV: str(path)},
        capture_output=True,
        text=True,
        timeout=300,  # a hang's guard, generous: the run takes seconds
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = read_results(path)
    assert (row["benchmark"], row["metric"], row["unit"], row["target"]) == (
        "bench.log.log_growth",
        "log growth",
        "x",
        "<= 1.10x",
    )
    printed = float(re.search(r"\((\d+\.\d+)x;", row["detail"]).group(1))
    assert row["value"] == pytest.approx(printed, abs=0.006)
    assert f"{row['verdict']}: log growth: {row['detail']}" in proc.stdout
    smoke = subprocess.run(
        [sys.executable, "-m", "bench.log.log_growth", "--smoke", "--record"],
        cwd=ROOT,
        env={**os.environ, bench_results.RESULTS_ENV: str(path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert smoke.returncode != 0 and "--record with --smoke" in smoke.stderr
    assert len(read_results(path)) == 1


def test_the_page_shows_the_latest_line_of_each_figure(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    base = dict.fromkeys(FIELDS, "")
    lines = [
        {**base, "benchmark": "bench.log.log_growth", "metric": "log growth", "value": 1.5,
         "unit": "x", "target": "<= 1.10x", "verdict": "FAIL", "commit": "aaa1111"},
        {**base, "benchmark": "bench.log.log_growth", "metric": "log growth", "value": 1.02,
         "unit": "x", "target": "<= 1.10x", "verdict": "PASS", "commit": "bbb2222"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [r["commit"] for r in latest(read_results(path)).values()] == ["bbb2222"]
    page = bench_page.render(path)
    assert "| `log.log_growth` | log growth | 1.02x | &lt;= 1.10x | **PASS** | `bbb2222` |" in page
    assert "aaa1111" not in page


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"benchmark": "bench.fold_speed"}\nnot json\n')
    with pytest.raises(ValueError, match="line 1: no metric"):
        read_results(path)
    path.write_text("not json\n")
    with pytest.raises(ValueError, match="line 1: not JSON"):
        read_results(path)


def test_every_recorded_benchmark_exists_and_every_figure_has_its_provenance() -> None:
    rows = read_results()
    modules = bench_page.bench_modules()
    assert {r["benchmark"] for r in rows} <= set(modules)
    assert all(r["commit"] and r["machine"] and r["date"] for r in rows)


def test_the_retired_targets_print_figures_and_no_verdict() -> None:
    """DESIGN.md, "Decisions taken": a step's raw round trips and the rebuild against
    read+decode have no target any more; the guard's figures stay."""
    for module in ("bench/bus_overhead.py", "bench/fold_speed.py"):
        assert "verdict(" not in (ROOT / module).read_text(), module
    newest = latest(read_results())
    for key in [
        ("bench.bus_overhead", "LLM step overhead in raw round trips"),
        ("bench.bus_overhead", "tool step overhead in raw round trips"),
        ("bench.fold_speed", "rebuild speed / baseline speed"),
    ]:
        assert newest[key]["verdict"] == "figure" and newest[key]["target"] == "", key
    guards = {m for (b, m), r in newest.items() if r["verdict"] == "guard bar"}
    assert guards == {
        "guard bar: LLM step CPU, services / pure step",
        "guard bar: tool step CPU, services / pure step",
    }
