"""The run page's "History cut" (issue 31): where a run's prompts left part of its
history out (``history: truncate``) or sent a summary of it (``compact``), per cycle,
as the projector derives it from the log; checked against the prompts the model was
actually sent, and against the compaction events."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.catalog.cycle import LLMRequested
from contreact_events.config.history import SUMMARY_TURN
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.wire.tasks import LLMTask
from contreact_ui.app import create_app
from contreact_ui.models import HistoryCut
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.store import ProjectionStore
from contreact_ui.read_models import RunProjector
from contreact_ui.settings import UISettings
from contreact_ui.views.run import history_cuts, run_page
from tests.support.sim import Sim, make_config, say


def run(run_id: str, cycles: int, history: dict[str, Any]) -> tuple[Sim, list[LLMTask]]:
    sent: list[LLMTask] = []

    def agent(task: LLMTask) -> Any:
        if task.task_id.endswith("/compact"):
            return say(f"summary before cycle {task.cycle}")
        sent.append(task)
        if task.step == 1:
            return say("", ("write", {"key": f"k{task.cycle}", "value": "v"}))
        return say(f"reflection {task.cycle}")

    sim = Sim(make_config(run_id=run_id, cycle_count=cycles, history=history))
    sim.drive([agent])
    assert sim.state.status == "completed"
    return sim, sent


def left_out_per_call(sim: Sim, sent: list[LLMTask]) -> list[tuple[int, int, int]]:
    """(cycle, messages left out, history length) of each agent call, from the prompt
    the model was sent: the history not in it (after the system message and summary)."""
    state = AgentState(run_id=sim.config.run_id)
    out, calls = [], iter(sent)
    for event in sim.log:
        state = fold(state, event)
        if isinstance(event, LLMRequested):
            task = next(calls)
            carried = [m for m in task.messages[1:] if not m.content.startswith(SUMMARY_TURN[:20])]
            out.append(
                (event.cycle, len(state.message_history) - len(carried), len(state.message_history))
            )
    return out


def projected(tmp_path: Path, sim: Sim) -> sqlite3.Connection:
    store = ProjectionStore.open(tmp_path / "p.db")
    projector = RunProjector(sim.config.run_id)
    half = len(sim.log) // 2  # in two batches, as a live run is projected
    for part in (sim.log[:half], sim.log[half:]):
        store.apply(projector.feed([(None, e) for e in part]))
    store.conn.row_factory = sqlite3.Row
    return store.conn


def expected(calls: list[tuple[int, int, int]]) -> dict[int, tuple[int, int, int, int]]:
    """Per cycle: first and last call's left-out count, history length, calls cutting."""
    rows: dict[int, tuple[int, int, int, int]] = {}
    for cycle, left_out, length in calls:
        if left_out:
            first = rows[cycle][0] if cycle in rows else left_out
            n = rows[cycle][3] + 1 if cycle in rows else 1
            rows[cycle] = (first, left_out, length, n)
    return rows


def test_truncation_points_are_the_messages_the_prompts_left_out(tmp_path: Path) -> None:
    sim, sent = run("t", 10, {"policy": "truncate", "keep_last": 6})
    cuts = history_cuts(projected(tmp_path, sim), "t", 0, 10**9)
    want = expected(left_out_per_call(sim, sent))
    assert want and min(want) > 1  # the first cycles fit whole: no cut marked there
    assert {c.cycle: (c.first_left_out, c.last_left_out, c.messages, c.calls) for c in cuts} == want
    assert {c.kind for c in cuts} == {"truncated"}
    for cut in cuts:  # each links to the first call of its cycle that left messages out
        event = sim.log[cut.seq - 1]
        assert isinstance(event, LLMRequested) and event.cycle == cut.cycle
        assert cut.compaction_seq is None


def test_compaction_points_are_marked_with_their_request(tmp_path: Path) -> None:
    rule = {"policy": "compact", "keep_last": 4, "threshold_messages": 12}
    sim, sent = run("c", 14, rule)
    conn = projected(tmp_path, sim)
    cuts = history_cuts(conn, "c", 0, 10**9)
    want = expected(left_out_per_call(sim, sent))
    assert {c.cycle: (c.first_left_out, c.last_left_out, c.messages, c.calls) for c in cuts} == want
    assert {c.kind for c in cuts} == {"summarised"}
    asked = {
        e.cycle: (i + 1, e.model)
        for i, e in enumerate(sim.log)
        if isinstance(e, HistoryCompactionRequested)
    }
    assert (
        asked
        and {c.cycle: (c.compaction_seq, c.compaction_model) for c in cuts if c.compaction_seq}
        == asked
    )
    page = run_page(conn, "c")
    assert page.history_cuts == cuts
    assert isinstance(page.history_cuts[0], HistoryCut)


def test_a_run_without_a_policy_has_no_cut(tmp_path: Path) -> None:
    sim, _sent = run("n", 6, {"policy": "none"})
    assert history_cuts(projected(tmp_path, sim), "n", 0, 10**9) == []


def test_the_run_page_shows_the_cuts_and_links_each_to_its_call(tmp_path: Path) -> None:
    sim, _sent = run("tp", 10, {"policy": "truncate", "keep_last": 6})
    archive = tmp_path / "runs"
    archive.mkdir()
    write_archive(archive, "tp", sim.log)
    assert not asyncio.run(rebuild(tmp_path / "ui.db", None, archive)).problems
    app = create_app(UISettings(data_dir=tmp_path, redis_url="redis://127.0.0.1:1/0"))
    with TestClient(app) as client:
        page = client.get("/runs/tp.json").json()
        html = client.get("/runs/tp").text
    first = page["history_cuts"][0]
    assert first["kind"] == "truncated" and first["cycle"] > 1
    assert "History cut" in html and "Policy <code>truncate</code>" in html
    assert f'href="/runs/tp/events/{first["seq"]}"' in html
