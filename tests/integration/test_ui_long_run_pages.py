"""The run and replay pages of a long run read what they need per cycle from the
projection (``cycle_marks``: where each cycle starts, whether its reflection was
embedded, its row of the similarity band) instead of the event log, show the operator
exchanges of the cycles they show in full, and answer the same from a decoded snapshot
kept in memory as from the store. A 120-cycle run made by the pure core, served by the
whole app from projections rebuilt from its archive."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from contreact_ui.read_models.rows import BAND_WIDTH
from tests.support.dash_runs import run_log
from tests.support.ui_client import app_client, get, rebuilt

RUN = "long-120"
CYCLES = 120


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rebuilt(tmp_path_factory.mktemp("ui-long-pages"), {RUN: run_log(RUN, CYCLES)})


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient]:
    with app_client(data_dir) as test_client:
        yield test_client


def test_the_band_is_the_similarities_of_each_cycle_to_the_ones_before(
    client: TestClient, data_dir: Path
) -> None:
    similarity = get(client, f"/runs/{RUN}.json")["similarity"]
    assert similarity["view"] == "band" and similarity["band_width"] == BAND_WIDTH
    store = sqlite3.connect(data_dir / "ui.db")
    embedded = sorted(
        r[0]
        for r in store.execute(
            "SELECT cycle FROM events WHERE run_id = ? AND type = 'ReflectionEmbedded'", (RUN,)
        )
    )
    assert similarity["cycles"] == embedded and len(embedded) == CYCLES
    expected: list[list[float | None]] = [[None] * len(embedded) for _ in range(BAND_WIDTH)]
    column = {c: i for i, c in enumerate(embedded)}
    for cycle, other, value in store.execute(
        "SELECT cycle, other, value FROM similarities WHERE run_id = ?", (RUN,)
    ):
        if 0 <= cycle - other - 1 < BAND_WIDTH:
            expected[cycle - other - 1][column[cycle]] = round(value, 3)
    assert similarity["band"] == expected
    assert any(v is not None for v in expected[BAND_WIDTH - 1])


def test_the_replay_jumps_to_where_each_cycle_starts(client: TestClient) -> None:
    starts = get(client, f"/runs/{RUN}/events.json?type=CycleStarted&limit=5000")["events"]
    page = get(client, f"/runs/{RUN}/replay.json?cycle=77")
    assert page["cycle_starts"] == [[e["cycle"], e["seq"]] for e in starts]
    assert len(page["cycle_starts"]) == CYCLES
    assert page["seq"] == dict(page["cycle_starts"])[77] and page["cycle"] == 77


def test_the_run_page_shows_the_exchanges_of_its_cycles(client: TestClient) -> None:
    every = CYCLES // 3  # paper_like writes to the operator every third cycle
    latest = get(client, f"/runs/{RUN}.json")
    assert latest["window"]["first"] == 101 and latest["operator_total"] == every
    assert [e["cycle"] for e in latest["operator"]] == list(range(102, CYCLES + 1, 3))
    first = get(client, f"/runs/{RUN}.json?from_cycle=1")
    assert [e["cycle"] for e in first["operator"]] == list(range(3, 101, 3))
    html = get(client, f"/runs/{RUN}").text
    assert f"of {every} in all" in html and 'id="window-pager-operator"' in html
    assert html.count('class="analysis-cell"') == len(latest["operator"])


def test_the_replay_shows_the_latest_exchanges_by_its_position(client: TestClient) -> None:
    end = get(client, f"/runs/{RUN}/replay.json")
    assert end["operator_total"] == CYCLES // 3 and len(end["operator"]) == 10
    assert [e["cycle"] for e in end["operator"]] == list(range(93, CYCLES + 1, 3))
    assert "The latest 10 of the 40 exchanges so far" in get(client, f"/runs/{RUN}/replay").text
    early = get(client, f"/runs/{RUN}/replay.json?cycle=8")
    assert early["operator_total"] == 2 and [e["cycle"] for e in early["operator"]] == [3, 6]


def test_a_kept_snapshot_replays_as_the_stored_one(client: TestClient) -> None:
    cache = client.app.state.snapshots  # type: ignore[attr-defined]
    paths = [f"/runs/{RUN}/replay.json?seq={seq}" for seq in (0, 5, 400, 401, 1500)]
    paths += [f"/runs/{RUN}/replay.json?cycle={c}" for c in (1, 6, 60, CYCLES)]
    paths.append(f"/runs/{RUN}/replay.json")
    cold = []
    for path in paths:
        cache.clear()
        cold.append(get(client, path))
    warm = [get(client, path) for path in paths]
    assert warm == cold
    assert len(cache) == cache.size  # more snapshots than it keeps: the oldest let go


def test_the_replay_shows_the_memory_changed_last_and_all_of_it_when_asked(
    client: TestClient,
) -> None:
    page = get(client, f"/runs/{RUN}/replay.json?cycle=110")
    keys = [e["key"] for e in page["memory"]]
    assert page["memory_total"] == 109 and len(keys) == 100  # paper_like: a key a cycle
    assert keys == sorted(keys) and set(keys) == {f"note-{c}" for c in range(10, 110)}
    every = get(client, f"/runs/{RUN}/replay.json?cycle=110&all_memory=true")
    assert len(every["memory"]) == every["memory_total"] == 109
    cycle_end = dict(page["cycle_starts"])[111] - 1  # cycle 110 has written its note
    stepped = get(client, f"/runs/{RUN}/replay.json?seq={cycle_end}")
    assert stepped["cycle"] == 110 and stepped["memory_total"] == 110
    changed = [e for e in stepped["memory"] if e["change"] is not None]
    assert [e["key"] for e in changed] == ["note-110"]  # this cycle's write comes first
    assert len(stepped["memory"]) == 100 and "note-10" not in {e["key"] for e in stepped["memory"]}
    html = get(client, f"/runs/{RUN}/replay?cycle=110").text
    assert "The 100 keys changed last of 109" in html and "all_memory=true" in html
