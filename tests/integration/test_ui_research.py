"""The dashboard's experiment page, search, runs table and composer-from-a-run, on a
2 x 2 experiment of hostile text (one replica with a second attempt), a 100-cycle
run and a run of its own, served by the whole app from projections rebuilt from
their archives."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from fastapi.testclient import TestClient

from contreact_events.config import parse_run_config
from contreact_events.config.overrides import changed_settings
from contreact_events.diversity.search_texts import keyword_match
from contreact_ui.semantic import TextEmbedder
from contreact_ui.text import display
from tests.support import hostile
from tests.support.experiment_runs import NEEDLE, ToyModel, experiment_logs, run_log
from tests.support.ui_client import app_client, get, rebuilt

EXP = "exp2x2"
LONG = "long-100"
REPLICAS = [f"{EXP}-{label}-{letter}" for label in ("alpha", "beta") for letter in "AB"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = experiment_logs(EXP)
    logs[LONG] = run_log(LONG, "model-long", 100, experiment="long-exp")
    logs["solo"] = run_log("solo", "model-solo", 2, experiment=None)
    return rebuilt(tmp_path_factory.mktemp("ui-research"), logs)


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient]:
    with app_client(data_dir) as test_client:
        yield test_client


def assert_inert(html: str) -> None:
    """Hostile text comes out as text: no element of it, no escape sequence."""
    for markup in hostile.MARKUP:
        assert markup not in html, markup
    assert "\x1b" not in html and "\u202e" not in html


# --- the experiment page ---------------------------------------------------------------


def test_the_experiment_page_shows_design_replicas_and_attempts(client: TestClient) -> None:
    page = get(client, f"/experiments/{EXP}.json")
    design = page["design"]
    assert design["models"] == ["alpha", "beta"] and design["replicas"] == ["A", "B"]
    assert design["shared"]["limits.tool_output_chars"] == 1234
    assert design["shared"]["deadlines.memory_s"] == 33.0
    assert design["shared"]["cycle_count"] == 3
    assert design["per_model"]["alpha"] == {"model_name": "model-a"}
    assert design["per_model"]["beta"] == {"model_name": "model-b"}
    assert design["per_replica"] == ["model_options.seed"]
    rows = {r["replica"]: r for r in page["replicas"]}
    assert sorted(rows) == ["alpha-A", "alpha-B", "beta-A", "beta-B"]
    first = rows["alpha-A"]
    assert first["run_id"] == f"{EXP}-alpha-A.2"  # the current attempt
    assert [(a["run_id"], a["attempt"]) for a in first["attempts"]] == [
        (f"{EXP}-alpha-A", 1),
        (f"{EXP}-alpha-A.2", 2),
    ]
    assert first["siblings"] == [f"{EXP}-alpha-B"]
    assert rows["beta-B"]["siblings"] == [f"{EXP}-beta-A"]
    for row in rows.values():
        assert row["status"] == "completed" and row["cycle"] == row["cycle_count"] == 3
        assert row["model"] == row["resolved_model"]
        assert row["last_advisory"].endswith("at cycle 3")
    assert page["statuses"] == {"completed": 4}


def test_the_experiment_page_html_links_every_replica_and_is_inert(client: TestClient) -> None:
    html = get(client, f"/experiments/{EXP}").text
    for run_id in REPLICAS:
        assert f'href="/runs/{run_id}"' in html
    assert f'href="/experiments/{EXP}/exports.zip"' in html
    assert f'href="/experiments/{EXP}/table1.csv"' in html
    assert 'data-live="replicas"' in html
    assert_inert(html)


def test_an_experiment_of_one_long_run(client: TestClient) -> None:
    page = get(client, "/experiments/long-exp.json")
    (row,) = page["replicas"]
    assert row["run_id"] == LONG and row["cycle"] == 100
    assert row["last_advisory"].endswith("at cycle 100")


def test_an_unknown_experiment_is_a_404_naming_the_fix(client: TestClient) -> None:
    body = get(client, "/experiments/no-such.json", 404)
    assert "no experiment 'no-such'" in body["detail"] and "/runs" in body["detail"]
    assert get(client, "/experiments/no-such/table1.csv", 404).text.count("\n") == 1
    get(client, "/experiments/bad%20name.json", 422)


def test_the_exports_zip_holds_every_run(client: TestClient) -> None:
    response = get(client, f"/experiments/{EXP}/exports.zip")
    assert response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        names = set(archive.namelist())
        runs = [*REPLICAS, f"{EXP}-alpha-A.2"]
        assert names == {f"{EXP}/{r}.jsonl" for r in runs} | {
            f"{EXP}/logs/{r}.events.jsonl" for r in runs
        }
        export = archive.read(f"{EXP}/{EXP}-beta-B.jsonl").decode()
    assert export == get(client, f"/runs/{EXP}-beta-B/export.jsonl").text


def test_table1_as_csv_has_each_model_and_the_paper(client: TestClient) -> None:
    text = get(client, f"/experiments/{EXP}/table1.csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    ours = [r for r in rows if r["source"] == "this experiment"]
    assert {r["model"] for r in ours} == {"alpha", "beta"}  # the experiment's labels
    compare = get(client, f"/compare.json?experiment={EXP}&by=model")
    table = {row["metric"]: row["ours"] for row in compare["table1"]}
    labels = [g["label"] for g in compare["groups"]]
    for r in ours:
        expected = table[r["metric"]][labels.index(r["model"])]
        assert float(r["ours"]) == pytest.approx(expected)
    assert any(r["source"] == "paper" and r["paper"] for r in rows)


# --- search ----------------------------------------------------------------------------


def test_keyword_search_finds_the_cycle_where_the_text_appears(client: TestClient) -> None:
    page = get(client, f"/search.json?q={NEEDLE.upper()}")
    hits = page["hits"]
    assert page["total"] == len(hits) == 7  # five experiment runs, the long run, solo
    assert {(h["kind"], h["cycle"]) for h in hits} == {("reflection", 2)}
    hit = next(h for h in hits if h["run_id"] == LONG)
    event = get(client, f"/runs/{LONG}/events/{hit['seq']}.json")
    assert event["event"]["type"] == "ReflectionRecorded" and event["event"]["cycle"] == 2
    assert NEEDLE in hit["match"].lower()
    html = get(client, f"/search?q={NEEDLE}").text
    assert f'href="/runs/{LONG}/events?cycle=2"' in html
    assert f'href="/runs/{LONG}/events/{hit["seq"]}"' in html
    assert "<mark>ZEBRACORN</mark>" in html


def test_search_is_literal_scoped_and_inert(client: TestClient) -> None:
    assert get(client, "/search.json?q=.*")["total"] == 0
    assert get(client, "/search.json?q=%25")["total"] == 0  # not a LIKE wildcard
    scoped = get(client, f"/search.json?q={NEEDLE}&experiment={EXP}")
    assert {h["run_id"] for h in scoped["hits"]} == {*REPLICAS, f"{EXP}-alpha-A.2"}
    assert get(client, f"/search.json?q={NEEDLE}&run=solo")["total"] == 1
    memory = get(client, "/search.json?q=tides of cycle 7 %3Cscript&kind=memory&run=" + LONG)
    assert [(h["kind"], h["label"], h["cycle"]) for h in memory["hits"]] == [
        ("memory", "note-7", 7)
    ]
    tools = get(client, "/search.json?q=svg onload&kind=tool&run=solo")
    assert tools["hits"] and tools["hits"][0]["label"] == hostile.TOOL
    operator = get(client, "/search.json?q=psst&kind=operator&run=solo")
    assert [h["cycle"] for h in operator["hits"]] == [1, 2]
    get(client, "/search.json?q=x&kind=nonsense", 422)
    for q in ("script", "javascript", "psst", "svg", "RED", "cycle 1&kind=memory"):
        html = get(client, f"/search?q={q}").text
        assert "<mark>" in html, q
        assert_inert(html)


@pytest.mark.parametrize(
    "q",
    [
        '"javascript:window',  # a quote: an FTS5 string delimiter, taken as a character
        "tides OR zebracorn",  # not an FTS5 operator
        "NEAR(tides cycle)",
        "tides*",
        "^tides",
        "-1",
        '"',  # shorter than a trigram: scanned
        "rE",
        "CYCLE 1",
        "straße",
        "<svg",
    ],
)
def test_keyword_search_finds_exactly_the_texts_that_hold_the_words(
    client: TestClient, data_dir: Path, q: str
) -> None:
    """Through the trigram index or the scan, the same texts as matching every text
    one by one in Python."""
    with sqlite3.connect(data_dir / "ui.db") as conn:
        rows = conn.execute("SELECT run_id, seq, kind, label, text FROM texts").fetchall()
    expected = {(r[0], r[1], r[2], r[3]) for r in rows if keyword_match(r[4], q)}
    page = get(client, "/search.json?" + urlencode({"q": q, "limit": 500}))
    assert page["total"] == len(expected), q
    assert {(h["run_id"], h["seq"], h["kind"], h["label"]) for h in page["hits"]} <= expected


def test_semantic_search_ranks_by_meaning(client: TestClient) -> None:
    client.app.state.embedder = TextEmbedder(ToyModel())  # type: ignore[attr-defined]
    page = get(client, "/search.json?q=tides of cycle 5&mode=semantic&kind=memory&run=" + LONG)
    assert page["hits"][0]["label"] == "note-5" and page["hits"][0]["cycle"] == 5
    scores = [h["score"] for h in page["hits"]]
    assert scores == sorted(scores, reverse=True)
    html = get(client, f"/search?q=tides&mode=semantic&kind=memory&run={LONG}").text
    assert_inert(html)


# --- the runs table --------------------------------------------------------------------


@pytest.mark.parametrize(
    "column",
    ["run_id", "status", "model", "cycle", "llm_calls", "tokens", "created_at", "updated_at"],
)
def test_runs_sort_by_any_column_both_ways(client: TestClient, column: str) -> None:
    def key(row: dict[str, Any]) -> Any:
        if column == "tokens":
            return row["prompt_tokens"] + row["completion_tokens"]
        return row[column]

    for order in ("asc", "desc"):
        rows = get(client, f"/runs.json?sort={column}&order={order}")["runs"]
        assert len(rows) == 7
        values = [key(r) for r in rows]
        assert values == sorted(values, reverse=order == "desc"), (column, order)


def test_runs_filter_by_model_status_and_date(client: TestClient) -> None:
    assert [r["run_id"] for r in get(client, "/runs.json?model=model-long")["runs"]] == [LONG]
    assert get(client, "/runs.json?status=completed")["total"] == 7
    assert get(client, "/runs.json?status=failed")["total"] == 0
    day = get(client, "/runs.json")["runs"][0]["created_at"][:10]  # the sim's clock: one day
    assert get(client, f"/runs.json?since={day}&until={day}")["total"] == 7
    assert get(client, "/runs.json?since=2999-01-01")["total"] == 0
    assert get(client, "/runs.json?until=2000-01-01")["total"] == 0
    get(client, "/runs.json?sort=payload", 422)  # not a column: never SQL
    get(client, "/runs.json?since=yesterday", 422)
    assert get(client, "/runs.json?since=&until=&model=")["total"] == 7  # an empty form
    html = get(client, "/runs?sort=cycle&order=desc").text
    assert 'aria-sort="descending"' in html and "sort=cycle&amp;order=asc" in html
    assert f'<a href="/experiments/{EXP}">{EXP}</a>' in html


# --- the composer, from a run ----------------------------------------------------------


def test_the_composer_opens_with_a_runs_config(client: TestClient, data_dir: Path) -> None:
    run_id = f"{EXP}-beta-B"
    page = get(client, f"/compose.json?from={run_id}")
    values = page["values"]
    assert page["started_from"] == run_id and page["error"] is None
    assert values["run_id"] == "" and values["model_name"] == "model-b"
    assert values["deadlines.memory_s"] == "33.0" and values["limits.tool_output_chars"] == "1234"
    assert values["model_options.seed"] == "41" and values["cycle_count"] == "3"
    composed = yaml.safe_load(get(client, page["download"]).text)
    composed["run_id"] = run_id
    original = get(client, f"/runs/{run_id}/events/1.json")["payload"]["config"]
    assert changed_settings(parse_run_config(original), parse_run_config(composed)) == {}
    assert all(display(v) == v for v in values.values())  # a page shows them unchanged
    html = get(client, f"/compose?from={run_id}").text
    assert 'id="started-from"' in html and 'id="yaml-preview"' in html
    assert_inert(html)
    assert "no run 'nope'" in get(client, "/compose.json?from=nope", 404)["detail"]
    run_page = get(client, f"/runs/{run_id}.json")
    assert {"label": "start a new run from this config", "href": f"/compose?from={run_id}"} in (
        run_page["exports"]
    )


def test_a_setting_line_is_checked_like_fork_set(client: TestClient) -> None:
    page = get(client, "/compose.json?submitted=1&model_name=m&cycle_count=2&settings=nope%3D1")
    assert "'nope' is not a run setting" in page["error"]
    ok = get(
        client,
        "/compose.json?submitted=1&model_name=m&cycle_count=2"
        "&settings=limits.tool_output_chars%3Dnull%0A%0Aollama_client_config.timeout_s%3D9",
    )
    assert ok["error"] is None
    data = yaml.safe_load(ok["yaml"])
    assert data["limits"]["tool_output_chars"] is None
    assert data["ollama_client_config"]["timeout_s"] == 9
    assert json.dumps(data)  # plain data
