"""``contreact search`` and the dashboard's search page answer the same question from
the same texts (``contreact_events.diversity.search_texts``): keyword (literal, any
case) and semantic (the embedder's model, loaded in each process), over archived
runs, against a real Redis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_cli.main import main
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings
from tests.support.experiment_runs import NEEDLE, experiment_logs

pytestmark = pytest.mark.redis


@pytest.fixture
def data(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    data = tmp_path / "data"
    for run_id, log in experiment_logs("cli-exp", second_attempt=False).items():
        write_archive(data / "runs", run_id, log)
    asyncio.run(rebuild(data / "ui.db", None, data / "runs"))
    return data


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--json"])
    assert not exited.value.code, capsys.readouterr().err
    found: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return found


def ui_json(data: Path, path: str) -> dict[str, object]:
    app = create_app(UISettings(data_dir=data, redis_url="redis://127.0.0.1:1/0"))
    with TestClient(app) as client:
        response = client.get(path)
    assert response.status_code == 200, response.text
    found: dict[str, object] = response.json()
    return found


def test_keyword_search_finds_the_same_texts_as_the_dashboard(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hits = cli_json(capsys, "search", NEEDLE.upper(), "--keyword", "--k", "100")
    assert {(h["run_id"], h["cycle"], h["kind"]) for h in hits} == {
        (f"cli-exp-{label}-{letter}", "2", "reflection")
        for label in ("alpha", "beta")
        for letter in "AB"
    }
    page = ui_json(data, f"/search.json?q={NEEDLE}")
    assert {(h["run_id"], h["seq"]) for h in page["hits"]} == {  # type: ignore[attr-defined]
        (h["run_id"], h["seq"]) for h in hits
    }
    assert cli_json(capsys, "search", ".*", "--keyword") == []  # literal: no pattern
    memory = cli_json(capsys, "search", "tides", "--keyword", "--kind", "memory", "--k", "3")
    assert [h["kind"] for h in memory] == ["memory 'note-1'", "memory 'note-2'", "memory 'note-3'"]


def test_semantic_search_ranks_as_the_dashboard_does(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedder's real model in both (the query and the memory values embedded
    with it): the same texts in the same order, with the same scores."""
    run = "cli-exp-beta-B"
    query = "the tides of the third cycle"
    hits = cli_json(capsys, "search", query, "--run", run, "--kind", "memory", "--kind", "operator")
    page = ui_json(
        data, f"/search.json?q={query}&mode=semantic&run={run}&kind=memory&kind=operator&limit=5"
    )
    ours = [(h["seq"], h["score"]) for h in page["hits"]]  # type: ignore[attr-defined]
    assert len(hits) == 5 and hits[0]["kind"] == "memory 'note-3'"
    assert [h["seq"] for h in hits] == [seq for seq, _ in ours]
    for hit, (_, score) in zip(hits, ours, strict=True):
        assert hit["score"] == pytest.approx(score, abs=1e-3)
