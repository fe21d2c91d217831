"""Table 2 in the dashboard, from real assessment records: some archived, some only in
Redis yet (written by the storage API the assessor uses), read through the one shared
reader. The compare page's cells are the matrix of those records, each links to its
ratings, whose raw answers (HTML, ANSI, a huge one) are text and bounded; a run's page
lists its assessments; without Redis the archive alone is read, and the page says so."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_bus.assessments import RatingKey, append_archive, record
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_events.config.run_places import RunFacts, run_places
from contreact_ui.app import create_app
from contreact_ui.models.assessments import RAW_LIMIT
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings
from tests.support import hostile
from tests.support.sim import Sim, make_config, say
from tests.support.stack import own_database

pytestmark = pytest.mark.redis

MODELS = {"GPT5": "m/gpt5", "Opus": "m/opus"}
RUNS = [f"exp-{label}-{letter}" for label in MODELS for letter in "AB"]
HOSTILE_RAW = f"{hostile.SCRIPT} {hostile.ANSI} {hostile.BIDI} I won't say"
HUGE_RAW = "Level 7. " + "x" * 100_000
TS = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def base(run_id: str, evaluator: str, repeat: int = 1) -> dict[str, Any]:
    return {
        "event_id": f"{run_id}|{evaluator}|{repeat}",
        "run_id": run_id,
        "ts": TS,
        "correlation_id": run_id,
        "instrument": "pei",
        "instrument_version": "1",
        "instrument_sha256": "a" * 64,
        "evaluator": evaluator,
        "repeat": repeat,
        "input_sha256": "b" * 64,
        "run_digest": "c" * 64,
        "run_events": 10,
        "job_id": f"job|{run_id}|{evaluator}|{repeat}",
    }


def rated(
    run_id: str,
    evaluator: str,
    value: int | None,
    status: str = "rated",
    raw: str = "",
    repeat: int = 1,
) -> RunAssessed:
    return RunAssessed(
        **base(run_id, evaluator, repeat),
        raw_answer=raw or f"Level {value}",
        status=status,
        value=value,
    )


ARCHIVED: list[RunAssessed | AssessmentFailed] = [
    rated("exp-GPT5-A", "m/gpt5", 2),
    rated("exp-Opus-A", "m/gpt5", 3),
    rated("exp-Opus-A", "m/opus", 9),
    AssessmentFailed(**base("exp-Opus-B", "m/gpt5"), error="no answer after 3 attempts"),
]
IN_REDIS = [
    rated("exp-GPT5-A", "m/opus", 6),
    rated("exp-GPT5-B", "m/gpt5", 4),
    rated("exp-GPT5-B", "m/opus", None, "unparseable", raw=HOSTILE_RAW),
    rated("exp-GPT5-B", "m/opus", 8, repeat=2),
    rated("exp-Opus-B", "m/opus", 7, raw=HUGE_RAW),
]


@pytest.fixture(scope="module")
def redis_db(redis_server: str) -> str:
    url = own_database(redis_server)

    async def write() -> None:
        client = aioredis.Redis.from_url(url)
        try:
            for event in IN_REDIS:
                key = RatingKey(event.instrument, event.evaluator, event.repeat)
                assert (await record(client, event, key)).new
        finally:
            await client.aclose()

    asyncio.run(write())
    return url


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("ui-assessments")
    archive = data / "runs"
    for run_id in RUNS:
        label = run_id.split("-")[1]
        sim = Sim(
            make_config(run_id=run_id, model_name=MODELS[label], experiment="exp", cycle_count=1)
        )
        sim.drive([say("Cycle done.")])
        write_archive(archive, run_id, sim.log)
    for run_id in RUNS:
        append_archive(archive, run_id, [e for e in ARCHIVED if e.run_id == run_id])
    report = asyncio.run(rebuild(data / "ui.db", None, archive))
    assert not report.problems and report.runs == len(RUNS)
    return data


@pytest.fixture(scope="module")
def client(data_dir: Path, redis_db: str) -> Iterator[TestClient]:
    app = create_app(UISettings(data_dir=data_dir, redis_url=redis_db, project=False))
    with TestClient(app) as test_client:
        yield test_client


def test_run_ids_give_the_experiment_label_and_replica() -> None:
    def place(run_id: str, model: str, experiment: str) -> tuple[str, str]:
        found = run_places([RunFacts(run_id, experiment, model)])[run_id]
        return found.group, found.letter

    assert place("exp-GPT5-A", "m/gpt5", "exp") == ("GPT5", "A")
    assert place("exp-my-model-AB.3", "m", "exp") == ("my-model", "AB")
    assert place("solo-run", "m/x", "") == ("m/x", "solo-run")


def test_table2_is_the_matrix_of_the_records(client: TestClient) -> None:
    page = client.get("/compare.json", params={"experiment": "exp"}).json()
    assert page["assessments_available"] is True
    table = page["assessments"]
    assert (table["runs"], table["records"], table["note"]) == (4, 9, None)
    pei = table["matrix"]["pei"]
    assert pei["histories"] == ["GPT5", "Opus"] and pei["evaluators"] == ["GPT5", "Opus"]
    cells = {(c["history"], c["evaluator"]): c for c in pei["cells"]}
    assert {k: (c["mean"], c["n"], c["unrated"]) for k, c in cells.items()} == {
        ("GPT5", "GPT5"): (3.0, 2, {}),
        ("GPT5", "Opus"): (7.0, 2, {"unparseable": 1}),  # (6 + 8) / 2: the unparseable is not in
        ("Opus", "GPT5"): (3.0, 1, {"failed": 1}),
        ("Opus", "Opus"): (8.0, 2, {}),
    }
    assert [c["self_rating"] for c in pei["cells"]] == [True, False, False, True]
    assert table["ratings_query"] == "experiment=exp"
    # GPT5 rated three histories (2, 4, 3): 3 -+ 4.302653 / sqrt(3); a cell has two
    means = {s["evaluator"]: s["interval"] for s in pei["evaluator_summaries"]}
    assert means["GPT5"]["method"] == "t" and means["GPT5"]["reason"] is None
    assert means["GPT5"]["low"] == pytest.approx(3 - 4.302653 / 3**0.5)
    assert cells[("GPT5", "GPT5")]["interval"]["low"] is None
    assert (
        cells[("GPT5", "GPT5")]["interval"]["reason"] == "n = 2: too few histories for an interval"
    )
    agreement = pei["agreement"]
    assert agreement["histories"] == 4 and agreement["left_out"] == [
        {"evaluator": "GPT5", "histories": 1, "why": {"failed": 1}},  # its call on Opus-B
        {"evaluator": "Opus", "histories": 0, "why": {}},  # GPT5-B's 2nd answer is a rating
    ]
    html = client.get("/compare", params={"experiment": "exp"}).text
    stats = html[html.index('id="table2-stats"') :]
    assert "GPT5: 1 of 4 histories (1 failed)" in stats
    assert "no interval: n = 2: too few histories for an interval" in stats  # self-preference
    footer = html[html.index("<tfoot>") : html.index("</tfoot>")]
    assert "[0.52, 5.48] t" in footer


def test_each_cell_links_to_its_ratings_with_raw_answers_as_text(client: TestClient) -> None:
    html = client.get("/compare", params={"experiment": "exp"}).text
    links = re.findall(
        r'<td class="cell[^"]*" data-history="GPT5" data-evaluator="Opus">\s*<a href="([^"]+)"',
        html,
    )
    assert len(links) == 1
    href = links[0].replace("&amp;", "&")
    assert parse_qs(urlparse(href).query) == {
        "experiment": ["exp"], "history": ["GPT5"], "evaluator": ["Opus"], "instrument": ["pei"],
    }  # fmt: skip
    ratings = client.get(href.replace("/assessments?", "/assessments.json?")).json()
    assert ratings["total"] == 3 and ratings["counts"] == {"rated": 2, "unparseable": 1}
    assert {(r["run_id"], r["repeat"], r["status"]) for r in ratings["rows"]} == {
        ("exp-GPT5-A", 1, "rated"), ("exp-GPT5-B", 1, "unparseable"), ("exp-GPT5-B", 2, "rated"),
    }  # fmt: skip
    page = client.get(href).text
    assert hostile.SCRIPT not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.__pwned" in page
    assert "\x1b" not in page and "\u202e" not in page
    assert "RED" in page  # the ANSI sequence is gone, its text stays


def test_a_huge_answer_is_bounded(client: TestClient) -> None:
    ratings = client.get("/assessments.json", params={"run": "exp-Opus-B"}).json()
    huge = next(r for r in ratings["rows"] if r["status"] == "rated")
    assert len(huge["raw"]) == RAW_LIMIT and huge["raw_truncated"] is True
    assert huge["raw_chars"] == len(HUGE_RAW)
    failed = next(r for r in ratings["rows"] if r["status"] == "failed")
    assert failed["raw"] == "no answer after 3 attempts" and failed["value"] is None
    html = client.get("/assessments", params={"run": "exp-Opus-B"}).text
    assert len(html) < RAW_LIMIT + 20_000
    assert f"{len(HUGE_RAW) - RAW_LIMIT:,} more characters" in html


def test_a_runs_page_lists_its_assessments(client: TestClient) -> None:
    page = client.get("/runs/exp-GPT5-B.json").json()
    assert [(a["evaluator_model"], a["repeat"], a["status"]) for a in page["assessments"]] == [
        ("m/gpt5", 1, "rated"), ("m/opus", 1, "unparseable"), ("m/opus", 2, "rated"),
    ]  # fmt: skip
    html = client.get("/runs/exp-GPT5-B").text
    assert 'id="run-assessments"' in html and hostile.SCRIPT not in html
    none = client.get("/runs/exp-GPT5-A.json").json()
    assert len(none["assessments"]) == 2


def test_without_redis_the_archive_alone_is_read_and_said(data_dir: Path) -> None:
    app = create_app(
        UISettings(data_dir=data_dir, redis_url="redis://127.0.0.1:1/0", project=False)
    )
    with TestClient(app) as client:
        table = client.get("/compare.json", params={"experiment": "exp"}).json()["assessments"]
        assert table["records"] == len(ARCHIVED)
        assert "archived records alone" in table["note"]
        assert "archived records alone" in client.get("/compare?experiment=exp").text


def test_runs_without_records_show_the_paper_alone(client: TestClient, data_dir: Path) -> None:
    page = client.get("/compare.json", params={"model": "nobody"}).json()
    assert page["assessments"]["matrix"] is None
    html = client.get("/compare", params={"model": "nobody"}).text
    assert "No assessment recorded for these runs yet" in html
    assert 'id="table2-paper"' in html


def test_unknown_filters_are_refused_in_one_line(client: TestClient) -> None:
    answer = client.get("/assessments.json", params={"run": "no-such-run"})
    assert answer.status_code == 404 and "no run 'no-such-run'" in answer.json()["detail"]
    assert client.get("/assessments.json", params={"status": "bogus"}).status_code == 422
