"""The dashboard's projector against a real Redis: it follows live run logs, takes
finished runs from the archive (also once retention dropped their Redis log), gives up
on quarantined and unreadable runs without stopping, resumes after a restart, and
reloads when another process rebuilds the store. Every path ends in the same store a
rebuild from the logs makes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_bus.run_log import RunLog
from contreact_bus.runs import register_run
from contreact_events.catalog import Event
from contreact_events.names import run_log_key, run_meta_key
from contreact_ui.models.research import SearchFilters
from contreact_ui.projection.follower import LogFollower, Notifier
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.store import ProjectionStore, connect_readonly
from contreact_ui.projection.tables import TABLES
from contreact_ui.views.search import search_page
from tests.support.sim import Sim, make_config, say
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis


def run_log(run_id: str, cycles: int = 3) -> list[Event]:
    sim = Sim(make_config(run_id=run_id, cycle_count=cycles, operator={"mode": "auto"}))
    sim.drive(
        [
            say("", ("write", {"key": "k{cycle}", "value": "v"})),
            say("", ("send_message_to_operator", {"message": "hello?"})),
            say("I wrote and asked."),
        ]
    )
    return sim.log


def rows(store: ProjectionStore, run_id: str) -> dict[str, Any]:
    cur = store.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
    names = [d[0] for d in cur.description]
    row = cur.fetchone()
    return dict(zip(names, row, strict=True)) if row else {}


def content(store: ProjectionStore) -> dict[str, list[tuple[object, ...]]]:
    """Every table but the projector's bookkeeping (log position, source)."""
    out = {}
    for table in TABLES:
        cur = store.conn.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        keep = [i for i, n in enumerate(names) if n not in ("last_entry_id", "source", "entry_id")]
        out[table] = sorted((tuple(r[i] for i in keep) for r in cur.fetchall()), key=repr)
    return out


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / "runs"


@pytest.fixture
def store(tmp_path: Path) -> ProjectionStore:
    return ProjectionStore.open(tmp_path / "ui.db")


async def append(redis: aioredis.Redis, events: list[Event]) -> None:
    for start in range(0, len(events), 7):
        await RunLog(redis).append(events[0].run_id, events[start : start + 7])


async def test_follows_a_live_run_to_its_end(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path, tmp_path: Path
) -> None:
    events = run_log("live-1")
    notifier = Notifier()
    projector = LogFollower(store, aredis, archive, notifier)
    await projector.load()
    await register_run(aredis, "live-1", None)
    await projector.discover()
    await projector.poll()
    assert "live-1" in projector.followers and not rows(store, "live-1")
    half = len(events) // 2
    await append(aredis, events[:half])
    await projector.poll()
    row = rows(store, "live-1")
    assert (row["status"], row["events"], row["terminal"]) == ("running", half, 0)
    assert notifier.since(0) == {"live-1"}
    seen = notifier.generation
    await append(aredis, events[half:])
    await projector.poll()
    row = rows(store, "live-1")
    assert (row["status"], row["events"], row["terminal"]) == ("completed", len(events), 1)
    assert "live-1" in projector.finished and not projector.followers
    assert notifier.since(seen) == {"live-1"}
    rebuilt = ProjectionStore.open(tmp_path / "rebuilt.db")
    await rebuild(rebuilt.path, aredis, archive)
    assert content(rebuilt) == content(store)


async def test_finished_runs_come_from_the_archive(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path
) -> None:
    old = run_log("old-1")
    write_archive(archive, "old-1", old)
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    await projector.discover()
    row = rows(store, "old-1")
    assert (row["status"], row["events"], row["source"]) == ("completed", len(old), "archive")


async def test_a_log_dropped_by_retention_is_finished_from_the_archive(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path, tmp_path: Path
) -> None:
    events = run_log("kept-1")
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    await register_run(aredis, "kept-1", None)
    await append(aredis, events[:10])
    await projector.discover()
    await projector.poll()
    assert rows(store, "kept-1")["events"] == 10
    # the run ends while the projector is away; its log is archived, then dropped
    await append(aredis, events[10:])
    write_archive(archive, "kept-1", events)
    await aredis.delete(run_log_key("kept-1"))
    await projector.discover()
    row = rows(store, "kept-1")
    assert (row["status"], row["events"], row["source"]) == ("completed", len(events), "archive")
    rebuilt = ProjectionStore.open(tmp_path / "rebuilt.db")
    await rebuild(rebuilt.path, aredis, archive)
    assert content(rebuilt) == content(store)


async def test_quarantined_and_unreadable_runs_are_shown_and_let_go(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path
) -> None:
    good, bad, held, odd = (run_log(r) for r in ("good-1", "bad-1", "held-1", "odd-1"))
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    for events in (good, bad, held):
        await register_run(aredis, events[0].run_id, None)
        await append(aredis, events[:5])
    await register_run(aredis, "odd-1", None)
    await RunLog(aredis).append("odd-1", [*odd[:5], odd[0], *odd[5:7]])  # does not fold
    await aredis.xadd(run_log_key("bad-1"), {"type": "Nonsense", "event": b"{not json"})
    await aredis.hset(
        run_meta_key("held-1"),
        mapping={"status": "quarantined", "failure_reason": "log unreadable at 9"},
    )
    await projector.discover()
    await projector.poll()
    await append(aredis, good[5:])
    await projector.poll()
    assert rows(store, "good-1")["status"] == "completed"
    bad_row = rows(store, "bad-1")
    assert bad_row["terminal"] == 1 and "not valid JSON" in bad_row["projection_error"]
    assert bad_row["events"] == 5  # what could be projected stays
    held_row = rows(store, "held-1")
    assert (held_row["status"], held_row["projection_error"]) == (
        "quarantined",
        "log unreadable at 9",
    )
    odd_row = rows(store, "odd-1")
    assert odd_row["events"] == 5 and "cannot be folded" in odd_row["projection_error"]
    assert not projector.followers


async def test_a_restarted_projector_takes_up_where_it_stopped(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path, tmp_path: Path
) -> None:
    events = run_log("resume-1")
    first = LogFollower(store, aredis, archive, Notifier())
    await first.load()
    await register_run(aredis, "resume-1", None)
    await append(aredis, events[:12])
    await first.discover()
    await first.poll()
    second = LogFollower(store, aredis, archive, Notifier())
    await second.load()  # refolds the stored events of the active run
    await append(aredis, events[12:])
    await second.discover()
    await second.poll()
    assert rows(store, "resume-1")["status"] == "completed"
    rebuilt = ProjectionStore.open(tmp_path / "rebuilt.db")
    await rebuild(rebuilt.path, aredis, archive)
    assert content(rebuilt) == content(store)


async def test_a_rebuild_by_another_process_is_picked_up(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path
) -> None:
    events = run_log("live-2", cycles=4)
    await register_run(aredis, "live-2", None)
    await append(aredis, events[:9])
    notifier = Notifier()
    projector = LogFollower(store, aredis, archive, notifier)
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop, poll_s=0.02, discover_s=0.05))
    try:
        await wait_for(lambda: rows(store, "live-2").get("events") == 9)
        generation = store.generation()
        await rebuild(store.path, aredis, archive)  # as `contreact-ui --rebuild` does
        assert store.generation() != generation
        await append(aredis, events[9:])
        await wait_for(lambda: rows(store, "live-2").get("status") == "completed")
        assert notifier.reset_at > 0
        assert rows(store, "live-2")["events"] == len(events)
    finally:
        stop.set()
        await task


def tidal_log(run_id: str, cycles: int) -> list[Event]:
    """A run whose reflection and memory value name their cycle (``tide-3``)."""

    def reply(task: Any) -> Any:
        cycle = task.cycle
        if task.step == 1:
            return say("", ("write", {"key": f"k{cycle}", "value": f"tide-{cycle} noted"}))
        return say(f"Cycle {cycle}: I wrote tide-{cycle} down.")

    sim = Sim(make_config(run_id=run_id, cycle_count=cycles, operator={"mode": "auto"}))
    sim.drive([reply])
    return sim.log


def keyword_hits(path: Path, q: str) -> list[tuple[str, int, str, str]]:
    conn = connect_readonly(path)
    try:
        page = search_page(conn, SearchFilters(q=q, limit=500))
    finally:
        conn.close()
    return [(h.run_id, h.seq, h.kind, h.label) for h in page.hits]


async def test_texts_projected_after_a_rebuild_are_found_by_keyword(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path, tmp_path: Path
) -> None:
    """A rebuild makes the trigram index in one go once its rows are in; the follower
    then indexes each new text as it projects it: a search finds both, exactly as in a
    store rebuilt once the run ended."""
    events = tidal_log("tidal-1", cycles=4)
    half = next(i for i, e in enumerate(events) if getattr(e, "cycle", 0) == 3)
    await register_run(aredis, "tidal-1", None)
    await append(aredis, events[:half])
    await rebuild(store.path, aredis, archive)
    assert [hit[1] for hit in keyword_hits(store.path, "TIDE-2")]  # indexed by the rebuild
    assert not keyword_hits(store.path, "tide-3")
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    await append(aredis, events[half:])
    await projector.discover()
    await projector.poll()
    assert rows(store, "tidal-1")["status"] == "completed"
    rebuilt = tmp_path / "rebuilt.db"
    await rebuild(rebuilt, aredis, archive)
    for q in ("tide-4", "tide-3 noted", "TIDE", "Cycle 2:", "de-"):
        found = keyword_hits(store.path, q)
        assert found and found == keyword_hits(rebuilt, q), q
    assert {hit[2] for hit in keyword_hits(store.path, "tide-4")} == {"memory", "reflection"}
    assert all(seq > half for _, seq, _, _ in keyword_hits(store.path, "tide-3"))


async def wait_for(predicate: Any, within_s: float = HANG_GUARD_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table as stored, bookkeeping and the text ids included."""
    conn = connect_readonly(path)
    try:
        return {
            table: sorted((tuple(r) for r in conn.execute(f"SELECT * FROM {table}")), key=repr)
            for table in TABLES
            if table != "text_index"
        } | {"index": [r[0] for r in conn.execute("SELECT rowid FROM text_index('noted')")]}
    finally:
        conn.close()


async def test_a_rebuild_in_batches_is_the_rebuild_in_one(
    aredis: aioredis.Redis, archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Archive runs are projected a batch at a time in a worker thread, Redis runs one
    at a time between them, and rows written whenever a batch fills up: the store is
    the same however the runs fall into batches, unreadable runs included."""
    import contreact_ui.projection.rebuild as rebuild_module

    logs = {run_id: tidal_log(run_id, cycles=2) for run_id in "abcdefghi"}
    for run_id in "bei":  # held by Redis (e: a line that does not decode)
        await register_run(aredis, run_id, None)
        await append(aredis, logs[run_id])
    await aredis.xadd(run_log_key("e"), {"type": "Nonsense", "event": b"{not json"})
    for run_id in "acdfgh":  # archived (g: garbled)
        write_archive(archive, run_id, logs[run_id])
    lines = (archive / "g.events.jsonl").read_bytes().splitlines(keepends=True)
    (archive / "g.events.jsonl").write_bytes(b"".join([*lines[:5], b"{garbled\n", *lines[5:]]))
    whole = await rebuild(tmp_path / "whole.db", aredis, archive)
    assert sorted(whole.problems) == ["e", "g"] and whole.runs == 7
    for batch_events in (1, 40, 75, 130):
        monkeypatch.setattr(rebuild_module, "BATCH_EVENTS", batch_events)
        path = tmp_path / f"batches-{batch_events}.db"
        report = await rebuild(path, aredis, archive)
        assert (report.runs, report.events, report.problems) == (
            whole.runs,
            whole.events,
            whole.problems,
        )
        assert dump(path) == dump(tmp_path / "whole.db")
    sources = dict(
        connect_readonly(tmp_path / "whole.db").execute("SELECT run_id, source FROM runs")
    )
    assert sources == {
        "a": "archive",
        "b": "redis",
        "c": "archive",
        "d": "archive",
        "e": "redis",
        "f": "archive",
        "g": "archive",  # the events before its garbled line, then its problem
        "h": "archive",
        "i": "redis",
    }
