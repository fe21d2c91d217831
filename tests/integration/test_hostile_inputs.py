"""Issue 29's minor items where users meet them: the CLI as a subprocess, the dashboard
through its app. Non-finite numbers in a config (29.5), `memory-rebuild` without a
memory store (29.6), a NUL in a keyword search (29.7), an empty `search` (29.11), and a
bad line in a run's assessment archive (29.4): one clear line each, or the bad line
left out and named, never a traceback or an HTTP 500."""

from __future__ import annotations

import asyncio
import csv
import io
import subprocess
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_bus.assessments import append_archive
from contreact_bus.runs import register_run
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.config import RunConfig
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.store import ProjectionStore
from contreact_ui.settings import UISettings
from tests.support import cli_process
from tests.support.sim import Sim, make_config, say
from tests.support.stack import own_database

pytestmark = [pytest.mark.redis]

TS = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def contreact(tmp_path: Path, redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.contreact(tmp_path / "data", redis_url, *args)


one_line = cli_process.one_line_error


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("cognition", "deadline_s", ".inf"),
        ("deadlines", "memory_s", ".inf"),
        ("model_options", "temperature", ".nan"),
        ("cognition", "temperature", "-.inf"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_where_the_config_is_read(
    tmp_path: Path, redis_url: str, section: str, key: str, value: str
) -> None:
    """Refused by the config model itself, so by the CLI and the orchestrator alike
    (it used to be accepted here, sent as null and dead-lettered there)."""
    path = tmp_path / "c.yaml"
    base = {"run_id": "inf-run", "model_name": "m", "cycle_count": 1, "backend": "scripted"}
    path.write_text(yaml.safe_dump(base) + f"{section}: {{{key}: {value}}}\n")
    proc = contreact(tmp_path, redis_url, "run", str(path))
    one_line(proc, f"'{section}.{key}'", "finite number")
    data = {**base, section: {key: yaml.safe_load(value)}}
    with pytest.raises(ValueError, match="finite number"):
        RunConfig.model_validate(data)


def test_memory_rebuild_without_a_memory_store_says_so(tmp_path: Path, redis_url: str) -> None:
    proc = contreact(tmp_path, redis_url, "memory-rebuild")
    one_line(proc, "no memory store at", "CONTREACT_DATA_DIR")


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_search_is_refused(tmp_path: Path, redis_url: str, query: str) -> None:
    one_line(contreact(tmp_path, redis_url, "search", query), "say what to look for")


# --- the dashboard ------------------------------------------------------------------------

RUNS = ("bad-exp-A-A", "bad-exp-A-B")
BROKEN = "bad-exp-A-C"
"""A replica whose archived log breaks after its first events."""


def _rated(run_id: str, value: int) -> RunAssessed:
    return RunAssessed(
        event_id=f"{run_id}|m/a|1",
        run_id=run_id,
        ts=TS,
        correlation_id=run_id,
        instrument="pei",
        instrument_version="1",
        instrument_sha256="a" * 64,
        evaluator="m/a",
        repeat=1,
        input_sha256="b" * 64,
        run_digest="c" * 64,
        run_events=10,
        job_id=f"job|{run_id}",
        raw_answer=f"Level {value}",
        status="rated",
        value=value,
    )


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[TestClient]:
    """Two runs of an experiment, each rated once; the first run's assessment archive
    also holds a line that is not JSON and one that is not a record."""
    data = tmp_path_factory.mktemp("bad-lines")
    archive = data / "runs"
    url = own_database(redis_server)

    async def index() -> None:
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(url)
        try:
            for run_id in RUNS:
                await register_run(client, run_id, "bad-exp")
        finally:
            await client.aclose()

    for run_id in RUNS:
        sim = Sim(make_config(run_id=run_id, model_name="m/a", experiment="bad-exp", cycle_count=1))
        sim.drive([say("Cycle done: the tides and the moon.")])
        write_archive(archive, run_id, sim.log)
        append_archive(archive, run_id, [_rated(run_id, 4 if run_id.endswith("A") else 6)])
    with (archive / f"{RUNS[0]}.assessments.jsonl").open("ab") as handle:
        handle.write(b'{"truncated": \n{"type": "RunAssessed", "run_id": 7}\n')
    sim = Sim(make_config(run_id=BROKEN, model_name="m/a", experiment="bad-exp", cycle_count=2))
    sim.drive([say("Cycle one."), say("Cycle two.")])
    write_archive(archive, BROKEN, sim.log)
    with (archive / f"{BROKEN}.events.jsonl").open("ab") as handle:
        handle.write(b"{not an event\n")  # its log cannot be read past here
    asyncio.run(index())
    problems = asyncio.run(rebuild(data / "ui.db", None, archive)).problems
    assert [p for p in problems if BROKEN not in str(p)] == [] and problems
    app = create_app(UISettings(data_dir=data, redis_url=url, project=False))
    with TestClient(app) as client:
        yield client


def test_a_bad_archive_line_is_left_out_and_named_on_every_page(dashboard: TestClient) -> None:
    named = f"{RUNS[0]}.assessments.jsonl:2"
    page = dashboard.get(f"/runs/{RUNS[0]}.json")
    assert page.status_code == 200, page.text
    body = page.json()
    assert [a["status"] for a in body["assessments"]] == ["rated"]
    assert (
        named in body["assessments_note"]
        and f"{RUNS[0]}.assessments.jsonl:3" in (body["assessments_note"])
    )
    html = dashboard.get(f"/runs/{RUNS[0]}")
    assert html.status_code == 200 and named in html.text
    compare = dashboard.get("/compare.json", params={"experiment": "bad-exp"})
    assert compare.status_code == 200, compare.text
    table = compare.json()["assessments"]
    assert table["records"] == 2 and named in table["note"]
    ratings = dashboard.get("/assessments.json", params={"experiment": "bad-exp"})
    assert ratings.status_code == 200, ratings.text
    assert ratings.json()["total"] == 2 and named in ratings.json()["note"]
    assert named in dashboard.get("/assessments", params={"experiment": "bad-exp"}).text


def test_a_nul_in_a_keyword_search_is_one_line(dashboard: TestClient) -> None:
    for path in ("/search.json", "/search"):
        for q in ("tides\x00moon", "\x00", "ti\x00"):
            answer = dashboard.get(path, params={"q": q, "mode": "keyword"})
            assert answer.status_code == 400, (path, q, answer.status_code)
            assert "NUL" in answer.text
    fine = dashboard.get("/search.json", params={"q": "tides", "mode": "keyword"}).json()
    assert fine["total"] == 2


def test_an_unreadable_run_is_named_not_downloaded_empty(dashboard: TestClient) -> None:
    """Issue 29.10: a run's export.jsonl answered 200 with an empty body; now the run
    is named with why, and the others download as before."""
    for download in ("export.jsonl", "events.jsonl"):
        answer = dashboard.get(f"/runs/{BROKEN}/{download}")
        assert answer.status_code == 400 and "its log cannot be read" in answer.text
    good = dashboard.get(f"/runs/{RUNS[0]}/export.jsonl")
    assert good.status_code == 200 and good.content


def test_an_unreadable_replica_is_named_on_the_experiment_page_and_in_its_downloads(
    dashboard: TestClient,
) -> None:
    """Issue 29.10, one rule: go on, name what was left out. The experiment page lists
    the replica whose log cannot be read, with why; ``exports.zip`` holds the others
    and a file naming it (it used to refuse the whole zip); Table 1 leaves it out of
    its figures (it used to count the cycles read before the bad line) and says so,
    on the compare page and in ``table1.csv``."""
    page = dashboard.get("/experiments/bad-exp.json")
    assert page.status_code == 200, page.text
    body = page.json()
    (named,) = body["left_out"]
    assert named.startswith(f"{BROKEN}: its log cannot be read")
    (row,) = [r for r in body["replicas"] if r["run_id"] == BROKEN]
    assert row["log_problem"]
    html = dashboard.get("/experiments/bad-exp")
    assert html.status_code == 200 and f"{BROKEN}: its log cannot be read" in html.text

    zipped = dashboard.get("/experiments/bad-exp/exports.zip")
    assert zipped.status_code == 200, zipped.text
    with zipfile.ZipFile(io.BytesIO(zipped.content)) as archive:
        names = set(archive.namelist())
        assert {f"bad-exp/{run}.jsonl" for run in RUNS} <= names
        assert f"bad-exp/{BROKEN}.jsonl" not in names
        assert BROKEN in archive.read("bad-exp/LEFT_OUT.txt").decode()

    compare = dashboard.get("/compare.json", params={"experiment": "bad-exp"}).json()
    (group,) = compare["groups"]
    assert group["runs"] == [*RUNS, BROKEN] and group["left_out"][0].startswith(BROKEN)
    assert any(BROKEN in w and "cannot be read" in w for w in compare["table1_warnings"])
    assert {tuple(r["n"]) for r in compare["table1"]} == {(2,)}  # the two readable runs

    table = dashboard.get("/experiments/bad-exp/table1.csv")
    assert table.status_code == 200, table.text
    rows = list(csv.DictReader(io.StringIO(table.text)))
    (left,) = [r for r in rows if r["metric"] == "left out"]
    assert left["model"] == group["label"] and BROKEN in left["source"]
    assert {r["source"] for r in rows} == {"this experiment", "paper", left["source"]}


def test_a_quarantined_run_is_named_but_not_left_out(tmp_path: Path, redis_server: str) -> None:
    """A quarantine carries a reason too, but the run's log was read whole: its events
    download and the experiment's zip keeps it (only a log cut short is left out)."""
    archive = tmp_path / "runs"
    run_id = "held-exp-A-A"
    sim = Sim(make_config(run_id=run_id, model_name="m/a", experiment="held-exp", cycle_count=1))
    sim.drive([say("Cycle done.")])
    write_archive(archive, run_id, sim.log)
    asyncio.run(rebuild(tmp_path / "ui.db", None, archive))
    store = ProjectionStore.open(tmp_path / "ui.db")
    store.set_problem(run_id, status="quarantined", error="decide refused an input")
    store.conn.close()
    app = create_app(
        UISettings(data_dir=tmp_path, redis_url=own_database(redis_server), project=False)
    )
    with TestClient(app) as client:
        assert client.get(f"/runs/{run_id}.json").json()["run"]["projection_error"]
        events = client.get(f"/runs/{run_id}/events.jsonl")
        assert events.status_code == 200 and len(events.content.splitlines()) == len(sim.log)
        assert client.get("/experiments/held-exp.json").json()["left_out"] == []
        zipped = client.get("/experiments/held-exp/exports.zip")
        with zipfile.ZipFile(io.BytesIO(zipped.content)) as files:
            assert f"held-exp/{run_id}.jsonl" in files.namelist()
            assert "held-exp/LEFT_OUT.txt" not in files.namelist()
