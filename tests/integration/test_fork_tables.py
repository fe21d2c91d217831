"""The paper's swap as an experiment file's ``fork`` section makes it (2 models x 2
replicas, each forked after cycle 2 to the other model), rated by both models, on a real
Redis: the CLI (``assess matrix``, ``report``, ``analyze``), the dashboard (``/compare``,
``table1.csv``, ``report.html``, the experiment page) and the report give the same
Table 1 and Table 2, with the diagonal and self-preference; forks are rows of their own
only when asked, never self-ratings, and count their own cycles; a failed earlier
attempt and a fork made with ``contreact fork`` are in none of the tables."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_bus.assessments import RatingKey, append_archive, record
from contreact_bus.experiments import queue_entry
from contreact_cli.main import main
from contreact_events.names import experiment_runs_key
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings
from tests.support.stack import own_database
from tests.support.swap_runs import fork_log, rating, ratings, swap

pytestmark = pytest.mark.redis

EXP = "swap"
MANUAL = "swap-A-A-c2-fork"
"""`contreact fork swap-A-A --at-cycle 2 --model model-b`: it inherits the experiment."""
SWAP = swap(EXP, retried=("B-B",))
LOGS = {**SWAP.logs, MANUAL: fork_log(SWAP.logs["swap-A-A"], MANUAL, 2, "model-b", 4)}
RATED = ratings(EXP, [*SWAP.replicas, *SWAP.forks])
ASIDE = [rating(r, m, 10) for r in (MANUAL, *SWAP.superseded) for m in ("model-a", "model-b")]
"""Ratings of runs that are not the experiment's current runs: never in a table."""
FORK_GROUPS = ["A -> B at 2", "B -> A at 2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Path:
    data = tmp_path_factory.mktemp("fork-tables")
    archive = data / "runs"
    for run_id, log in LOGS.items():
        write_archive(archive, run_id, log)
    for run_id in LOGS:
        append_archive(archive, run_id, [r for r in [*RATED, *ASIDE][::2] if r.run_id == run_id])
    url = own_database(redis_server)

    async def setup() -> None:
        client = aioredis.Redis.from_url(url)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for entry in SWAP.entries:  # as `experiment run` records them
                    queue_entry(pipe, EXP, entry)
                pipe.sadd(experiment_runs_key(EXP), *LOGS)  # as the orchestrator lists them
                await pipe.execute()
            for event in [*RATED, *ASIDE][1::2]:  # the rest only in Redis yet
                await record(client, event, RatingKey("pei", event.evaluator, event.repeat))
        finally:
            await client.aclose()

    asyncio.run(setup())
    report = asyncio.run(rebuild(data / "ui.db", None, archive))
    assert not report.problems and report.runs == len(LOGS)
    (data / "url").write_text(url)
    return data


@pytest.fixture
def cli_env(data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REDIS_URL", (data / "url").read_text())
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data))
    return data


@pytest.fixture(scope="module")
def client(data: Path) -> Iterator[TestClient]:
    settings = UISettings(data_dir=data, redis_url=(data / "url").read_text(), project=False)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def cli_matrix(capsys: pytest.CaptureFixture[str], forks: str) -> dict[str, Any]:
    asked = ["--forks", forks] if forks != "none" else []  # none: the default
    code, out, err = cli(capsys, "assess", "matrix", EXP, *asked, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def cells(matrix: dict[str, Any]) -> dict[tuple[str, str], tuple[float, bool]]:
    return {(c["history"], c["evaluator"]): (c["mean"], c["self_rating"]) for c in matrix["cells"]}


def test_table2_has_its_diagonal_and_self_preference(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = cli_matrix(capsys, "none")
    pei = matrix["pei"]
    assert pei["histories"] == ["A", "B"] and pei["evaluators"] == ["A", "B"]
    assert cells(pei) == {
        ("A", "A"): (2.0, True),
        ("A", "B"): (3.0, False),
        ("B", "A"): (6.0, False),  # the failed first attempt of B-B (rated 10) is not in
        ("B", "B"): (7.0, True),
    }
    preference = {p["evaluator"]: (p["index"], p["histories"]) for p in pei["self_preference"]}
    assert preference == {"A": (-1.0, 2), "B": (1.0, 2)}
    assert matrix["runs"] == 4 and matrix["forks"] == "none"
    assert any("4 fork run(s) left out" in line for line in matrix["left_out"])
    assert any(MANUAL in line for line in matrix["left_out"])


def test_forks_are_rows_of_their_own_only_when_asked(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pei = cli_matrix(capsys, "as-rows")["pei"]
    assert pei["histories"] == ["A", "B", *FORK_GROUPS] and pei["evaluators"] == ["A", "B"]
    found = cells(pei)
    assert {k: v for k, v in found.items() if k[0] in FORK_GROUPS} == {
        (g, e): (5.0, False) for g in FORK_GROUPS for e in ("A", "B")
    }
    assert found[("A", "A")] == (2.0, True) and found[("B", "B")] == (7.0, True)
    preference = {p["evaluator"]: p["index"] for p in pei["self_preference"]}
    assert preference == {"A": -1.0, "B": 1.0}  # fork histories never enter it
    only = cli_matrix(capsys, "only")["pei"]
    assert only["histories"] == FORK_GROUPS and only["evaluators"] == ["A", "B"]
    assert not any(c["self_rating"] for c in only["cells"]) and only["self_preference"] == []
    code, text, _ = cli(capsys, "assess", "matrix", EXP, "--forks", "as-rows")
    assert code == 0 and "A -> B at 2" in text


@pytest.mark.parametrize("forks", ["none", "as-rows", "only"])
def test_the_dashboard_gives_the_clis_matrix(
    cli_env: Path, client: TestClient, capsys: pytest.CaptureFixture[str], forks: str
) -> None:
    """One function: the same rows, columns, cells, diagonal, self-preference and
    statistics, the same attempts counted (the dashboard counted the failed one)."""
    ours = cli_matrix(capsys, forks)
    page = client.get("/compare.json", params={"experiment": EXP, "forks": forks}).json()
    assert page["assessments"]["matrix"] == ours
    assert page["assessments"]["ratings_query"] == f"experiment={EXP}&forks={forks}"
    cell = {"history": ours["pei"]["histories"][0], "evaluator": "B", "instrument": "pei"}
    behind = client.get(
        "/assessments.json", params={"experiment": EXP, "forks": forks, **cell}
    ).json()
    assert behind["total"] == 2  # the two histories of the cell, nothing from elsewhere


def table1_of(page: dict[str, Any]) -> dict[tuple[str, str], tuple[float, int]]:
    labels = [g["label"] for g in page["groups"]]
    return {
        (label, row["metric"]): (row["ours"][i], row["n"][i])
        for row in page["table1"]
        for i, label in enumerate(labels)
    }


def test_table1_counts_a_forks_own_cycles_in_a_group_of_its_own(client: TestClient) -> None:
    page = client.get("/compare.json", params={"experiment": EXP}).json()
    assert [g["label"] for g in page["groups"]] == ["A", "B"]
    assert [len(g["runs"]) for g in page["groups"]] == [2, 2]  # n = 2 per model, not 4
    rows = client.get("/compare.json", params={"experiment": EXP, "forks": "as-rows"}).json()
    assert [g["label"] for g in rows["groups"]] == ["A", "B", *FORK_GROUPS]
    table = table1_of(rows)
    # model-a writes 10 characters a reflection, model-b 1,000; a fork runs 2 cycles of
    # its own (3, 4): not the 2 it copied
    assert table[("A", "reflection_kchars")] == (0.03, 2)
    assert table[("B", "reflection_kchars")] == (3.0, 2)
    assert table[("A -> B at 2", "reflection_kchars")] == (2.0, 2)
    assert table[("B -> A at 2", "reflection_kchars")] == (0.02, 2)
    text = client.get(f"/experiments/{EXP}/table1.csv", params={"forks": "as-rows"}).text
    csv_rows = [r for r in csv.DictReader(io.StringIO(text)) if r["source"] == "this experiment"]
    assert {r["model"] for r in csv_rows} == {"A", "B", *FORK_GROUPS}
    for r in csv_rows:
        assert (float(r["ours"]), int(r["n"])) == table[(r["model"], r["metric"])]


def test_the_report_and_analyze_count_as_the_dashboard(
    cli_env: Path, client: TestClient, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for forks in ("none", "as-rows"):
        out = tmp_path / f"{forks}.html"
        code, _, err = cli(capsys, "report", EXP, "--out", str(out), "--forks", forks)
        assert code == 0, err
        html = out.read_text()
        served = client.get(f"/experiments/{EXP}/report.html", params={"forks": forks})
        assert served.status_code == 200
        for found in (html, served.text):
            assert ("A -&gt; B at 2" in found.split('id="table1"')[1].split("</section>")[0]) is (
                forks == "as-rows"
            )
    code, _, err = cli(
        capsys, "analyze", "--experiment", EXP, "--out", str(tmp_path), "--format", "csv"
    )
    assert code == 0, err
    runs = pd.read_csv(tmp_path / "runs.csv").set_index("run_id")
    fork = runs.loc["swap-A-A-to-B"]
    assert (fork["label"], fork["replica"], fork["kind"]) == ("A -> B at 2", "A", "fork")
    assert runs.loc[MANUAL, "kind"] == "outside" and runs.loc["swap-B-B.2", "label"] == "B"
    assert runs.loc["swap-A-A-to-B", "reflection_kchars"] == 2.0
    ratings_table = pd.read_csv(tmp_path / "assessments.csv")
    assert set(ratings_table["history_model"]) == {"A", "B", *FORK_GROUPS}
    assert set(ratings_table["evaluator"]) == {"A", "B"}


def test_the_experiment_page_names_its_forks_and_its_fork_section(client: TestClient) -> None:
    page = client.get(f"/experiments/{EXP}.json").json()
    assert page["design"]["models"] == ["A", "B"] and page["design"]["replicas"] == ["A", "B"]
    assert page["design"]["fork"] == {
        "at_cycle": [2],
        "cycle_count": [4],
        "from_labels": ["A", "B"],
        "to": ["A", "B"],
        "groups": FORK_GROUPS,
        "runs": 4,
    }
    assert [r["run_id"] for r in page["replicas"]] == [
        "swap-A-A", "swap-A-B", "swap-B-A", "swap-B-B.2",
    ]  # fmt: skip
    forks = [(f["name"], f["group"], f["made_by"]) for f in page["forks"]]
    assert forks == [
        ("A-A -> B", "A -> B at 2", "experiment"),
        ("A-B -> B", "A -> B at 2", "experiment"),
        ("B-A -> A", "B -> A at 2", "experiment"),
        ("B-B -> A", "B -> A at 2", "experiment"),
        ("A-A -> B at 2", "A-A -> B at 2", "fork"),
    ]
    html = client.get(f"/experiments/{EXP}").text
    assert "2 model(s) \u00d7 2 replica(s)" in html and "2 fork(s) at cycle 2" in html
    assert "fork: {at_cycle: 2, cycle_count: 4, from: [A, B], to: [A, B]}" in html
    zipped = client.get(f"/experiments/{EXP}/exports.zip").content
    with zipfile.ZipFile(io.BytesIO(zipped)) as archive:
        names = set(archive.namelist())
    assert f"{EXP}/forks/swap-A-A-to-B.jsonl" in names and f"{EXP}/swap-A-A.jsonl" in names
    assert not any(MANUAL in name for name in names)


@pytest.fixture
def going(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The swap with one fork still running (its log stops in its first own cycle)."""
    other = swap("going")
    running = other.forks[-1]
    log = other.logs[running]
    other.logs[running] = log[: max(i for i, e in enumerate(log) if e.type == "CycleStarted")]
    for run_id, events in other.logs.items():
        write_archive(tmp_path / "runs", run_id, events)

    async def setup() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for entry in other.entries:
                    queue_entry(pipe, "going", entry)
                await pipe.execute()
        finally:
            await client.aclose()

    asyncio.run(setup())
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path))
    return running


def test_assess_rates_the_replicas_and_the_forks_only_when_asked(
    going: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It rated every fork too, and refused the whole experiment while one ran."""
    code, out, err = cli(capsys, "assess", "--experiment", "going", "--json")
    assert code == 0, err
    rated = {(p["run_id"], p["evaluator"]) for p in json.loads(out)}
    replicas = ["going-A-A", "going-A-B", "going-B-A", "going-B-B"]
    assert rated == {(r, m) for r in replicas for m in ("model-a", "model-b")}
    code, out, err = cli(capsys, "assess", "--experiment", "going", "--forks", "as-rows", "--json")
    assert code == 0, err
    runs = {p["run_id"] for p in json.loads(out)}
    assert runs == {*replicas, "going-A-A-to-B", "going-A-B-to-B", "going-B-A-to-A"}
    assert err.count("\n") == 1 and f"fork {going} (B -> A at 2) has not ended" in err
