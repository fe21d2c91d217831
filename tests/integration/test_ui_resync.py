"""The dashboard's follower after a Redis failover, on real Redis servers: entries it
had read are gone from a run's log (the tail the old primary took with it) and other
events stand in their place, under new stream ids (a fold then fails) or under the same
ids (a promoted replica whose clock is behind; no fold fails, another server answers).
Either way the run is projected again from its log: every table, the search index, the
run page and the replay page end as a rebuild from the log makes them. A log that
really does not fold is still reported, once, and not read again in a loop."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.local_redis import running_redis_server
from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_bus.runs import register_run
from contreact_events.catalog import Event
from contreact_events.names import run_log_key
from contreact_events.wire.codec import event_to_fields, event_to_json
from contreact_ui.projection.follower import LogFollower, Notifier
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.snapshots import SnapshotCache
from contreact_ui.projection.store import ProjectionStore, connect_readonly
from contreact_ui.projection.tables import TABLES
from contreact_ui.views.replay import replay_page
from contreact_ui.views.run import run_page
from tests.integration.test_ui_projector import append, keyword_hits, rows, run_log
from tests.support.sim import Sim, make_config, say

pytestmark = pytest.mark.redis

CYCLES = 7
SPLIT = 5
"""The cycle from which the two histories of a run differ (its memory and reflection)."""


def history(run_id: str, marker: str) -> list[Event]:
    """A run whose cycles from ``SPLIT`` on write and reflect ``marker`` (the rest is
    the same whatever the marker): two histories of one run, sharing a prefix."""

    def reply(task: Any) -> Any:
        word = marker if task.cycle >= SPLIT else "same"
        if task.step == 1:
            value = f"{word}-{task.cycle} noted"
            return say("", ("write", {"key": f"k{task.cycle}", "value": value}))
        return say(f"Cycle {task.cycle}: {word}.")

    sim = Sim(make_config(run_id=run_id, cycle_count=CYCLES, operator={"mode": "auto"}))
    sim.drive([reply])
    return sim.log


def split(run_id: str) -> tuple[list[Event], list[Event], int, int]:
    """The lost history, the one written instead, where they part, and how far the
    lost one was read: a few events into the cycle after the next snapshot."""
    lost, kept = history(run_id, "alpha"), history(run_id, "beta")
    shared = next(
        i
        for i, (x, y) in enumerate(zip(lost, kept, strict=True))
        if event_to_json(x) != event_to_json(y)
    )
    read = next(
        i for i, e in enumerate(lost) if e.type == "CycleStarted" and getattr(e, "cycle", 0) == 6
    )
    return lost, kept, shared, read + 4


def content(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table as the pages read it, but the follower's bookkeeping (log position,
    source, and the text ids, which a run projected again takes anew)."""
    conn = connect_readonly(path)
    try:
        out = {}
        for table in TABLES:
            if table == "text_index":
                continue
            cur = conn.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            skip = ("last_entry_id", "source", "entry_id", "id")
            keep = [i for i, n in enumerate(names) if n not in skip]
            out[table] = sorted((tuple(r[i] for i in keep) for r in cur.fetchall()), key=repr)
        return out
    finally:
        conn.close()


def pages(path: Path, run_id: str, cache: SnapshotCache, at: int) -> tuple[Any, Any]:
    """The run page's data and the replay page's at event ``at`` (through ``cache``)."""
    conn = connect_readonly(path)
    try:
        run = run_page(conn, run_id).model_dump(mode="json")
        replay = replay_page(conn, run_id, at, None, True, True, snapshots=cache)
        return run, replay.model_dump(mode="json")
    finally:
        conn.close()


def indexed(path: Path, q: str) -> list[tuple[object, ...]]:
    """The texts the trigram index names for ``q``, as its rowids lead to them (an entry
    left behind by a text that is gone leads to none, or to another)."""
    conn = connect_readonly(path)
    try:
        found = conn.execute(
            "SELECT f.run_id, f.seq, f.kind, f.label, f.folded FROM text_index AS i "
            "LEFT JOIN text_folds AS f ON f.id = i.rowid WHERE text_index MATCH ?",
            (f'"{q}"',),
        )
        return sorted((tuple(r) for r in found), key=repr)
    finally:
        conn.close()


async def same_as_rebuilt(
    store: ProjectionStore, redis: aioredis.Redis, archive: Path, tmp_path: Path, name: str
) -> Path:
    rebuilt = tmp_path / f"{name}.db"
    await rebuild(rebuilt, redis, archive)
    assert content(store.path) == content(rebuilt)
    for q in ("alpha", "beta-5 noted", "same-4", "Cycle 6:"):
        assert keyword_hits(store.path, q) == keyword_hits(rebuilt, q), q
        assert indexed(store.path, q) == indexed(rebuilt, q), q
    return rebuilt


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / "runs"


@pytest.fixture
def store(tmp_path: Path) -> ProjectionStore:
    return ProjectionStore.open(tmp_path / "ui.db")


@pytest.fixture
async def other_server(tmp_path: Path) -> AsyncIterator[aioredis.Redis]:
    """A second Redis: the replica promoted in the first one's place."""
    (tmp_path / "promoted").mkdir()
    with running_redis_server(tmp_path / "promoted") as url:
        client = aioredis.Redis.from_url(url)
        try:
            yield client
        finally:
            await client.aclose()


async def test_a_lost_tail_written_again_under_new_ids_is_projected_again(
    aredis: aioredis.Redis, store: ProjectionStore, archive: Path, tmp_path: Path
) -> None:
    lost, kept, shared, read = split("fo-1")
    key = run_log_key("fo-1")
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    await register_run(aredis, "fo-1", None)
    await append(aredis, lost[:read])
    await projector.discover()
    await projector.poll()
    assert rows(store, "fo-1")["events"] == read and keyword_hits(store.path, "alpha")
    cache = SnapshotCache(4)
    at = read - 2  # past the snapshot of cycle 6, which the lost events changed
    stale_page = pages(store.path, "fo-1", cache, at)
    # the failover: the promoted replica had the shared prefix; the orchestrator
    # writes the run on from there (new ids: after the old primary's, as time went on)
    ids = [entry_id for entry_id, _ in entries(await aredis.xrange(key))]
    await aredis.xdel(key, *ids[shared:])
    await RunLog(aredis).append("fo-1", kept[shared : read + 3])
    await projector.poll()
    assert projector.resyncs == 1 and "fo-1" in projector.followers
    row = rows(store, "fo-1")
    assert (row["events"], row["projection_error"]) == (read + 3, None)
    rebuilt = await same_as_rebuilt(store, aredis, archive, tmp_path, "middle")
    fresh = pages(rebuilt, "fo-1", SnapshotCache(4), at)
    assert pages(store.path, "fo-1", cache, at) == fresh != stale_page
    assert not keyword_hits(store.path, "alpha")
    await append(aredis, kept[read + 3 :])
    await projector.poll()
    row = rows(store, "fo-1")
    assert (row["status"], row["events"]) == ("completed", await aredis.xlen(key))
    assert projector.resyncs == 1
    rebuilt = await same_as_rebuilt(store, aredis, archive, tmp_path, "end")
    assert pages(store.path, "fo-1", cache, at) == pages(rebuilt, "fo-1", SnapshotCache(4), at)


async def copy(source: aioredis.Redis, target: aioredis.Redis, run_id: str, count: int) -> None:
    """The first ``count`` entries of a run's log, under their ids, and its registration."""
    key = run_log_key(run_id)
    await register_run(target, run_id, None)
    for entry_id, fields in entries(await source.xrange(key))[:count]:
        copied: dict[Any, Any] = dict(fields)
        await target.xadd(key, copied, id=entry_id)


async def test_another_server_with_other_events_under_the_same_ids(
    aredis: aioredis.Redis,
    other_server: aioredis.Redis,
    store: ProjectionStore,
    archive: Path,
    tmp_path: Path,
) -> None:
    """No fold fails here: the promoted server's log holds, under the ids the follower
    read last, other events. It answers as another server, so every position is read
    back: the changed run, and one that ended here on events the new server lacks, are
    projected again; one whose log it holds whole is not."""
    lost, kept, shared, read = split("fo-2")
    ended, intact = run_log("ended-2"), run_log("same-2")
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    for events, upto in ((lost, read), (ended, len(ended)), (intact, 9)):
        await register_run(aredis, events[0].run_id, None)
        await append(aredis, events[:upto])
    await projector.discover()
    await projector.poll()
    assert "ended-2" in projector.finished and projector.resyncs == 0
    await copy(aredis, other_server, "fo-2", shared)
    lost_ids = [entry_id for entry_id, _ in entries(await aredis.xrange(run_log_key("fo-2")))]
    for entry_id, event in zip(lost_ids[shared:], kept[shared:read], strict=True):
        fields: dict[Any, Any] = dict(event_to_fields(event))
        await other_server.xadd(run_log_key("fo-2"), fields, id=entry_id)
    await copy(aredis, other_server, "ended-2", len(ended) - 3)
    await copy(aredis, other_server, "same-2", 9)
    projector.redis = other_server  # what the sentinels name now
    await projector.poll()
    assert projector.resyncs == 2
    assert rows(store, "ended-2")["status"] == "running" and "ended-2" in projector.followers
    assert rows(store, "fo-2")["events"] == read
    await same_as_rebuilt(store, other_server, archive, tmp_path, "promoted")
    await append(other_server, kept[read:])
    await RunLog(other_server).append("ended-2", ended[-3:])
    await append(other_server, intact[9:])
    await projector.poll()
    assert {r: rows(store, r)["status"] for r in ("fo-2", "ended-2", "same-2")} == dict.fromkeys(
        ("fo-2", "ended-2", "same-2"), "completed"
    )
    assert projector.resyncs == 2
    await same_as_rebuilt(store, other_server, archive, tmp_path, "promoted-end")


async def test_a_log_that_does_not_fold_is_reported_once(
    aredis: aioredis.Redis,
    store: ProjectionStore,
    archive: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past its first page a fold that fails may be the follower's stale view: the run
    is read again from its start, once; this log does not fold from its start either,
    so it is reported (what folds before the bad event stays) and let go."""
    events = run_log("odd-2")
    projector = LogFollower(store, aredis, archive, Notifier())
    await projector.load()
    await register_run(aredis, "odd-2", None)
    await append(aredis, events[:10])
    await projector.discover()
    await projector.poll()
    await RunLog(aredis).append("odd-2", [events[3], *events[10:]])  # does not fold
    with caplog.at_level(logging.WARNING, logger="contreact_ui.projection.follower"):
        for _ in range(3):
            await projector.poll()
            await projector.discover()
        restarted = LogFollower(store, aredis, archive, Notifier())
        await restarted.load()  # a restart checks every position: not this run again
        await restarted.discover()
        await restarted.poll()
    assert projector.resyncs == 1 and restarted.resyncs == 0
    assert "odd-2" in projector.finished and "odd-2" in restarted.finished
    given_up = [r for r in caplog.records if "is no longer projected" in r.getMessage()]
    assert len(given_up) == 1 and "cannot be folded" in given_up[0].getMessage()
    row = rows(store, "odd-2")
    assert row["events"] == 10 and "cannot be folded" in row["projection_error"]
