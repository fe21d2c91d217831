"""Analysis against the platform's other readers: the dataframes and the report give the
dashboard's own figures for the same runs (its projector, store and comparison page);
``contreact analyze`` and ``contreact report`` read runs from Redis and from the
archives alike; the dashboard serves the report ``contreact report`` writes."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from contreact_analysis.frames import RunFrames, build_frames, read_frames
from contreact_analysis.stats import table1, trajectories
from contreact_bus.archive import write_archive
from contreact_bus.run_log import RunLog
from contreact_bus.runs import register_run
from contreact_cli.main import main
from contreact_events.catalog import Event
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.store import connect_readonly
from contreact_ui.settings import UISettings
from contreact_ui.views.compare import compare_page
from tests.support import hostile
from tests.support.analysis_runs import EXPERIMENT, REPLICAS, experiment_logs, run_id

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def logs() -> dict[str, list[Event]]:
    return experiment_logs()


@pytest.fixture(scope="module")
def frames(logs: dict[str, list[Event]]) -> RunFrames:
    return build_frames(logs)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory, logs: dict[str, list[Event]]) -> Path:
    """The dashboard's store, projected from the same logs by its own rebuild."""
    data = tmp_path_factory.mktemp("analysis-ui")
    for run, events in logs.items():
        write_archive(data / "runs", run, events)
    hostile_logs = experiment_logs(experiment="hostile-exp", extra=hostile.REFLECTION, cycles=2)
    for run, events in hostile_logs.items():
        write_archive(data / "runs", run, events)
    report = asyncio.run(rebuild(data / "ui.db", None, data / "runs"))
    assert not report.problems and report.runs == 12
    return data


def test_table1_is_the_dashboards_table1(frames: RunFrames, dashboard: Path) -> None:
    conn = connect_readonly(dashboard / "ui.db")
    try:
        page = compare_page(conn, runs=[], models=[], experiment=EXPERIMENT, by="model")
    finally:
        conn.close()
    # one grouping rule: an experiment's runs by their label, as the report groups them
    ours = table1(frames.runs, by="label").set_index(["group", "metric"])
    labels = [group.label for group in page.groups]
    assert labels == ["alpha", "beta"]
    for row in page.table1:
        for label, shown in zip(labels, row.ours, strict=True):
            assert shown == pytest.approx(
                round(float(str(ours.loc[(label, row.metric), "mean"])), 3)
            )
    # The per-cycle charts: the dashboard's mean per cycle is the trajectories' mean.
    paths = trajectories(frames.cycles, frames.runs, by="label").set_index(
        ["group", "metric", "cycle"]
    )
    for series in page.series:
        for metric in ("tool_calls", "response_chars", "max_similarity"):
            for cycle, shown in zip(series.cycles, series.values[metric], strict=True):
                key = (series.label, metric, cycle)
                if shown is None:
                    assert key not in paths.index
                else:
                    assert shown == pytest.approx(round(float(str(paths.loc[key, "mean"])), 4))


def test_runs_and_cycles_are_the_dashboards_rows(frames: RunFrames, dashboard: Path) -> None:
    conn = connect_readonly(dashboard / "ui.db")
    try:
        runs = pd.read_sql_query("SELECT * FROM runs", conn).set_index("run_id")
        cycles = pd.read_sql_query("SELECT * FROM cycles", conn).set_index(["run_id", "cycle"])
    finally:
        conn.close()
    ours = frames.runs.set_index("run_id")
    for run in ours.index:
        for column in ("status", "model", "backend", "llm_calls", "memory_keys", "events"):
            assert runs.loc[run, column] == ours.loc[run, column], (run, column)
        assert (
            runs.loc[run, "prompt_tokens"] + runs.loc[run, "completion_tokens"]
            == (ours.loc[run, "tokens"])
        )
    mine = frames.cycles.set_index(["run_id", "cycle"])
    shared = [
        c for c in mine.columns if c in cycles.columns and c not in ("started_at", "ended_at")
    ]
    assert {"memory_ops_total", "response_chars", "reflection", "max_similarity"} <= set(shared)
    for column in shared:
        left = cycles.loc[mine.index, column].reset_index(drop=True)
        right = mine[column].reset_index(drop=True)
        if column in ("reflection_complete", "complete"):
            left = left.astype(bool)
        pd.testing.assert_series_equal(
            left, right, check_dtype=False, check_names=False, obj=column
        )


def test_the_dashboard_serves_the_report(dashboard: Path) -> None:
    app = create_app(UISettings(data_dir=dashboard, redis_url="redis://127.0.0.1:1/0"))
    with TestClient(app) as client:
        page = client.get(f"/experiments/{EXPERIMENT}/report.html")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<script" not in page.text and page.text.count("<svg") == 4
        assert f"{EXPERIMENT}-alpha-A" in page.text
        hostile_page = client.get("/experiments/hostile-exp/report.html")
        assert hostile_page.status_code == 200
        assert_inert(hostile_page.text)
        missing = client.get("/experiments/no-such/report.html")
        assert missing.status_code == 404 and "no run of experiment" in missing.text
        assert client.get("/experiments/..%2Fx/report.html").status_code in (404, 422)


def assert_inert(html: str) -> None:
    """Hostile agent text is text: no element of it, no control character left (the
    report's own charts are ``<svg`` elements: the hostile one has an ``onload``)."""
    for markup in hostile.MARKUP:
        assert (markup if markup != "<svg" else "<svg onload") not in html, markup
    assert "&lt;script&gt;window.__pwned" in html
    assert "\x1b" not in html and "\u202e" not in html and "\x07" not in html
    assert "<script" not in html


@pytest.fixture
def cli_data(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Alpha's runs still in Redis (logs and the experiment's index), beta's archived
    (their logs gone from Redis, as after the retention)."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    data = tmp_path / "data"
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data))
    logs = experiment_logs()

    async def put() -> None:
        redis = aioredis.Redis.from_url(redis_url)
        try:
            for run, events in logs.items():
                await register_run(redis, run, EXPERIMENT)
                if "-alpha-" in run:
                    await RunLog(redis).append(run, events)
                else:
                    write_archive(data / "runs", run, events)
        finally:
            await redis.aclose()

    asyncio.run(put())
    return data


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return int(exit_.value.code or 0)


def test_analyze_reads_redis_and_archives(
    cli_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], frames: RunFrames
) -> None:
    out = tmp_path / "tables"
    assert cli("analyze", "--experiment", EXPERIMENT, "--out", str(out)) == 0
    assert "runs.parquet  6 rows" in capsys.readouterr().out
    written = read_frames(out)
    pd.testing.assert_frame_equal(written.runs, frames.runs)
    pd.testing.assert_frame_equal(written.cycles, frames.cycles)
    one = tmp_path / "one"
    runs = [run_id("alpha", "A"), run_id("beta", "C")]
    assert cli("analyze", *runs, "--out", str(one), "--format", "csv", "--json") == 0
    assert '"runs": 2' in capsys.readouterr().out
    assert list(read_frames(one, "csv").runs["run_id"]) == runs


def test_analyze_and_report_errors_are_one_line(
    cli_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("analyze", "--out", str(tmp_path)) == 2
    assert "contreact analyze RUN" in capsys.readouterr().err
    assert cli("analyze", "--experiment", "nope", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run of experiment 'nope'" in err
    assert cli("analyze", "ghost-run", "--out", str(tmp_path)) == 2
    assert "no run 'ghost-run'" in capsys.readouterr().err
    assert cli("report", "nope", "--out", str(tmp_path / "r.html")) == 2


def test_report_writes_one_self_contained_file(
    cli_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.html"
    assert cli("report", EXPERIMENT, "--out", str(target)) == 0
    assert "(6 runs)" in capsys.readouterr().out
    html = target.read_text()
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert "with the 95% t interval of the mean" in html and "bootstrap" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert html.count("<svg") == 4
    assert f"<title>Experiment {EXPERIMENT}</title>" in html
    for section in ("design", "table1", "paired", "charts", "runs", "reproduction"):
        assert f'id="{section}"' in html
    assert f"contreact report {EXPERIMENT} --out {target}" in html
    assert html.count('class="run"') == len(REPLICAS) * 2
    assert "Acknowledged." in html  # the operator exchanges, with the policy's reply
    assert "paper 30.7" not in html  # no label is a paper model: no paper figure beside
    assert "Sonnet" in html  # but the paper's table is there


def test_hostile_text_in_the_report_is_inert(tmp_path: Path) -> None:
    from contreact_analysis.report import build_report, render_report

    logs: dict[str, Any] = experiment_logs(experiment="hostile", extra=hostile.VALUE, cycles=2)
    html = render_report(build_report(build_frames(logs), title="t", command="c", resamples=99))
    assert_inert(html)
    assert "&lt;a href=&#34;javascript:" in html or "&lt;a href=&quot;javascript:" in html
    assert "\x1b" not in html


def assessed(run: str, evaluator: str, value: int | None) -> Any:
    from contreact_events.catalog.assessment import RunAssessed

    return RunAssessed(
        event_id=f"{run}|{evaluator}",
        run_id=run,
        ts=datetime(2026, 11, 25, 8, 0, tzinfo=UTC),
        correlation_id=run,
        instrument="pei",
        instrument_version="1",
        instrument_sha256="a" * 64,
        evaluator=evaluator,
        repeat=1,
        input_sha256="b" * 64,
        run_digest="c" * 64,
        run_events=10,
        job_id=f"job|{run}|{evaluator}",
        raw_answer=f"Level {value}" if value is not None else "It depends.",
        status="rated" if value is not None else "unparseable",
        value=value,
    )


def test_table2_and_the_assessments_table_once_assessed(
    cli_data: Path, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each model rates each replica: alpha's histories 2 and 4 by alpha, 6 by beta ...
    the report's Table 2 shows the cell means; analyze writes the ratings."""
    from contreact_bus.assessments import RatingKey, record
    from contreact_bus.experiments import ReplicaEntry, queue_entry

    values = {"alpha": {"alpha-model": 3, "beta-model": 6}, "beta": {"alpha-model": 1}}

    async def put() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for model in ("alpha", "beta"):
                    for letter in REPLICAS:
                        run = run_id(model, letter)
                        entry = ReplicaEntry(
                            f"{model}-{letter}", model, letter, f"{model}-model", run, 1, "d"
                        )
                        queue_entry(pipe, EXPERIMENT, entry)
                await pipe.execute()
            for model, by in values.items():
                for k, letter in enumerate(REPLICAS):
                    for evaluator, value in by.items():
                        event = assessed(run_id(model, letter), evaluator, value + k)
                        await record(client, event, RatingKey("pei", evaluator, 1))
            unread = assessed(run_id("beta", "A"), "beta-model", None)  # no rating in it
            await record(client, unread, RatingKey("pei", "beta-model", 1))
        finally:
            await client.aclose()

    asyncio.run(put())
    target = tmp_path / "report.html"
    assert cli("report", EXPERIMENT, "--out", str(target)) == 0
    html = target.read_text()
    assert 'id="table2"' in html
    table2 = html[html.index('id="table2"') : html.index('id="runs"')]
    # alpha rated by alpha: 3, 4, 5 -> 4.0 (bold: a self-rating); by beta: 6, 7, 8 -> 7.0
    assert "<strong>4.0</strong>" in table2 and "7.0" in table2 and "2.0" in table2
    # ... each with its t interval named: 4 -+ 4.302653 / sqrt(3)
    assert '<strong>4.0</strong> <span class="ci">[1.5, 6.5] t</span>' in table2
    assert '<span class="ci unrated">1 unparseable</span>' in table2  # beta on beta-A
    assert "Left out as unrated, of 6 histories: beta 3 (unparseable 1, no record 2)." in table2
    out = tmp_path / "tables"
    assert cli("analyze", "--experiment", EXPERIMENT, "--out", str(out)) == 0
    assert "assessments.parquet  10 rows" in capsys.readouterr().out
    ratings = pd.read_parquet(out / "assessments.parquet")
    assert set(ratings["history_model"]) == {"alpha", "beta"}
    assert sorted(ratings["value"].dropna()) == sorted(
        float(v + k) for by in values.values() for v in by.values() for k in range(3)
    )


def test_no_table2_before_assessments(cli_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    assert cli("report", EXPERIMENT, "--out", str(target)) == 0
    assert 'id="table2"' not in target.read_text()
    assert not (tmp_path / "tables" / "assessments.parquet").exists()


def test_the_dashboards_report_shows_table2_once_assessed(dashboard: Path) -> None:
    """The assessment records the compare page reads (archived here; Redis does not
    answer) make the dashboard's report show Table 2, as `contreact report` does."""
    from contreact_bus.assessments import append_archive

    for k, letter in enumerate(REPLICAS):
        run = run_id("beta", letter)
        append_archive(dashboard / "runs", run, [assessed(run, "alpha-model", 2 + 2 * k)])
    app = create_app(UISettings(data_dir=dashboard, redis_url="redis://127.0.0.1:1/0"))
    with TestClient(app) as client:
        page = client.get(f"/experiments/{EXPERIMENT}/report.html")
    assert page.status_code == 200
    table2 = page.text[page.text.index('id="table2"') : page.text.index('id="runs"')]
    assert "<th>beta</th>" in table2 and "<th>alpha</th>" in table2
    assert "4.0" in table2 and "n = 3" in table2  # beta's histories rated 2, 4, 6 by alpha


def test_the_report_lists_the_questions_asked_of_a_run_escaped() -> None:
    """Issue 31: a run's queries (``contreact query``, recorded beside it) show in its
    section of the report, their untrusted text inert."""
    from contreact_analysis.report import build_report, render_report
    from contreact_events.catalog.query import RunQueried

    logs: dict[str, Any] = experiment_logs(experiment="asked", cycles=2)
    frames = build_frames(logs)
    run_id = str(frames.runs["run_id"].iloc[0])
    asked = RunQueried(
        event_id="q1",
        run_id=run_id,
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        correlation_id=run_id,
        question="What did you keep? <script>alert(1)</script>",
        by="ana",
        model="m",
        backend="scripted",
        input_sha256="ab" * 32,
        run_events=3,
        run_digest="d",
        state_shape="s",
        cycle=2,
        answer="A note.",
    )
    report = build_report(frames, title="t", command="c", resamples=99, queries={run_id: [asked]})
    html = render_report(report)
    assert "Questions asked of the run" in html and "A note." in html
    assert "<script>alert(1)</script>" not in html and "abababababab" in html
