"""The memory service on a real Redis: tasks from ``tasks:memory`` applied to a real
SQLite file, answered in the orchestrator's inbox, acked after; duplicates, malformed
entries, a dead consumer's pending task, the entry point in burst mode, and the
rebuild helper against the live store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_gate import TaskGate
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    MEMORY_GROUP,
    MEMORY_TASKS_STREAM,
    SERVICES_HEARTBEAT,
)
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, MemoryTask
from contreact_memory.handler import MemoryHandler
from contreact_memory.main import run
from contreact_memory.rebuild import rebuild_runs
from contreact_memory.settings import MemorySettings
from contreact_memory.store import MemoryStore
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import ask_for
from tests.support.sim import make_config, say
from tests.support.store_sim import StoreSim

pytestmark = pytest.mark.redis

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
FAST = ConsumerSettings(block_ms=20, reclaim_every_s=0.0)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def task(task_id: str, tool: str, run_id: str = "run-a", **arguments: Any) -> MemoryTask:
    return MemoryTask(
        task_id=task_id,
        run_id=run_id,
        tool=tool,
        arguments=arguments,
        ts=T0 + timedelta(seconds=len(task_id)),
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(tmp_path / "memory.db")
    yield opened
    opened.close()


async def send(aredis: aioredis.Redis, *tasks: MemoryTask) -> None:
    stream = TaskStream(aredis, MEMORY_TASKS_STREAM)
    for t in tasks:
        await stream.send(t)


async def drain(
    aredis: aioredis.Redis,
    store: MemoryStore,
    name: str = "worker-1",
    settings: ConsumerSettings = FAST,
) -> int:
    consumer = Consumer(aredis, MEMORY_TASKS_STREAM, MEMORY_GROUP, name, settings)
    handler = MemoryHandler(store, Inbox(aredis, 1), None)  # the gate: tested on its own
    return await serve(consumer, MemoryTask, handler, burst=True)


async def inbox(aredis: aioredis.Redis) -> list[InboxMessage]:
    entries: Any = await aredis.xrange(INBOX)
    return [message_from_fields(InboxMessage, fields) for _id, fields in entries]


async def pending(aredis: aioredis.Redis) -> int:
    info = await aredis.xpending(MEMORY_TASKS_STREAM, MEMORY_GROUP)
    return int(info["pending"])


def completed(message: InboxMessage) -> ToolCallCompleted:
    event = message.to_event(T0)
    assert isinstance(event, ToolCallCompleted)
    return event


async def test_tasks_are_applied_and_answered_in_the_inbox(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    await send(
        aredis,
        task("t1", "write", key="plan", value="explore 🧭"),
        task("t2", "read", key="plan"),
        task("t3", "read", key="missing"),
        task("t4", "list", "run-b"),
    )
    assert await drain(aredis, store) == 4
    results = [completed(m) for m in await inbox(aredis)]
    assert [(e.causation_id, e.task_id, e.run_id) for e in results] == [
        ("t1", "t1", "run-a"),
        ("t2", "t2", "run-a"),
        ("t3", "t3", "run-a"),
        ("t4", "t4", "run-b"),
    ]
    assert [(e.tool_name, e.output, e.ok) for e in results] == [
        ("write", "Saved under key 'plan'.", True),
        ("read", "explore 🧭", True),
        ("read", "Error: no memory under key 'missing'. Use list() to see the keys.", False),
        ("list", "Memory is empty.", True),
    ]
    assert await pending(aredis) == 0


async def test_a_duplicated_task_is_answered_twice_and_applied_once(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    first = task("t1", "write", key="k", value="v")
    await send(aredis, first, first, task("t2", "delete", key="k"), first)
    assert await drain(aredis, store) == 4
    results = [completed(m) for m in await inbox(aredis)]
    assert [(e.task_id, e.output) for e in results] == [
        ("t1", "Saved under key 'k'."),
        ("t1", "Saved under key 'k'."),
        ("t2", "Deleted key 'k'."),
        ("t1", "Saved under key 'k'."),
    ]
    assert store.dump() == []  # the late repeat did not bring the key back


async def test_the_entry_is_acked_only_after_the_result_is_in_the_inbox(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    await aredis.set(INBOX, "not a stream")  # the inbox write fails (WRONGTYPE)
    await send(aredis, task("t1", "write", key="k", value="v1"))
    assert await drain(aredis, store) == 0
    assert await pending(aredis) == 1
    assert len(store.dump()) == 1  # applied, but not answered, so not acked

    await aredis.delete(INBOX)
    await send(aredis, task("t2", "write", key="k", value="v2"))
    assert await drain(aredis, store) == 2  # its own pending entry first, then the new one
    results = [completed(m) for m in await inbox(aredis)]
    assert [(e.task_id, e.output) for e in results] == [
        ("t1", "Saved under key 'k'."),
        ("t2", "Saved under key 'k' (the previous value was replaced)."),
    ]
    assert await pending(aredis) == 0
    assert [row[2] for row in store.dump()] == ["v2"]


async def test_malformed_entries_are_dead_lettered(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    await aredis.xadd(MEMORY_TASKS_STREAM, {"msg": b"{not json"})
    await aredis.xadd(MEMORY_TASKS_STREAM, {"msg": b'{"task_id": "x"}'})
    await aredis.xadd(MEMORY_TASKS_STREAM, {"something": b"else"})
    await send(aredis, task("t1", "list"))
    assert await drain(aredis, store) == 1
    dead: Any = await aredis.xrange(DEAD_LETTER_STREAM)
    assert len(dead) == 3
    assert all(fields[b"reason"].startswith(b"cannot decode") for _id, fields in dead)
    assert [completed(m).task_id for m in await inbox(aredis)] == ["t1"]
    assert await pending(aredis) == 0


async def test_a_dead_consumers_task_is_reclaimed(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    settings = ConsumerSettings(block_ms=20, reclaim_idle_ms=200, reclaim_every_s=0.0)
    survivor = Consumer(aredis, MEMORY_TASKS_STREAM, MEMORY_GROUP, "survivor", settings)
    handler = MemoryHandler(store, Inbox(aredis, 1), None)
    assert await serve(survivor, MemoryTask, handler, burst=True) == 0  # already running

    await send(aredis, task("t1", "write", key="k", value="v"))
    dead = Consumer(aredis, MEMORY_TASKS_STREAM, MEMORY_GROUP, "dies", FAST)
    assert len(await dead.read(block=False)) == 1  # read, then it dies without an ack
    assert await serve(survivor, MemoryTask, handler, burst=True) == 0  # not idle long enough
    await asyncio.sleep(0.3)
    assert await serve(survivor, MemoryTask, handler, burst=True) == 1
    assert [completed(m).output for m in await inbox(aredis)] == ["Saved under key 'k'."]
    assert await pending(aredis) == 0
    assert len(store.dump()) == 1


async def test_a_task_reclaimed_by_a_fresh_consumer_is_applied_once(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    """A consumer just started reads reclaimed entries and its own pending ones in
    its first batch, so it may get the same entry twice: the answers agree."""
    await send(aredis, task("t1", "write", key="k", value="v"))
    dead = Consumer(aredis, MEMORY_TASKS_STREAM, MEMORY_GROUP, "dies", FAST)
    await dead.ensure_group()
    assert len(await dead.read(block=False)) == 1
    await asyncio.sleep(0.1)
    fresh = ConsumerSettings(block_ms=20, reclaim_idle_ms=50, reclaim_every_s=0.0)
    assert await drain(aredis, store, "fresh", fresh) >= 1
    outputs = {(m.causation_id, completed(m).output) for m in await inbox(aredis)}
    assert outputs == {("t1", "Saved under key 'k'.")}
    assert await pending(aredis) == 0
    assert len(store.dump()) == 1


async def test_the_entry_point_serves_in_burst_mode(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    settings = MemorySettings(
        redis_url=redis_url, data_dir=tmp_path, consumer_name="unit", block_ms=20
    )
    for sent in (task("t1", "write", key="k", value="v"), task("t2", "read", key="k")):
        await ask_for(aredis, sent.run_id, sent)  # the run's log asks for each in turn
        await send(aredis, sent)
        assert await run(settings, burst=True) == 1
    assert [completed(m).output for m in await inbox(aredis)] == ["Saved under key 'k'.", "v"]
    assert await aredis.hget(SERVICES_HEARTBEAT, "memory:unit") is not None
    reopened = MemoryStore.open(tmp_path / "memory.db", create=False)
    assert [row[1:3] for row in reopened.dump()] == [("k", "v")]
    reopened.close()


async def test_rebuild_from_the_run_log_equals_the_live_store(
    aredis: aioredis.Redis, store: MemoryStore, tmp_path: Path
) -> None:
    """A run decided by the core, its memory calls answered by the live store as the
    service answers them; its log in Redis rebuilds that store exactly."""
    run_id = "run-r"
    calls = [
        ("write", {"key": "a", "value": "1"}),
        ("write", {"key": "a", "value": "2"}),
        ("write", {"key": "b", "value": "ü" * 1000}),
        ("delete", {"key": "b"}),
        ("write", {"key": "c", "value": "3"}),
        ("read", {"key": "zz"}),
    ]
    sim = StoreSim(make_config(run_id=run_id, cycle_count=1), store)
    sim.drive([say("", *calls), say("a reflection")])
    assert sim.state.status == "completed"
    await RunLog(aredis).append(run_id, sim.log)

    report = await rebuild_runs(
        aredis, tmp_path / "archive", [run_id], store.path, tmp_path / "rebuilt.db"
    )
    assert report.identical, report.differences
    assert report.output_mismatches == ()
    assert report.entries == 2
    rebuilt = MemoryStore.open(tmp_path / "rebuilt.db", create=False)
    assert rebuilt.dump() == store.dump(run_id)
    rebuilt.close()

    store.apply(task("late", "write", run_id, key="only-live", value="x"))
    report = await rebuild_runs(aredis, tmp_path / "archive", [run_id], store.path)
    assert not report.identical
    assert report.differences == ("run run-r key 'only-live': only in the live store",)


async def append(log: RunLog, run_id: str, event: Any) -> None:
    await log.append(run_id, [event])


async def test_only_the_task_its_run_waits_on_is_applied(
    aredis: aioredis.Redis, store: MemoryStore
) -> None:
    """A task written straight into the stream, a stale copy of a task the run sent
    again, or one the run no longer waits on: dropped, never applied."""
    asked = task("t1", "write", key="k", value="asked")
    await ask_for(aredis, "run-a", asked)
    forged = task("t9", "write", key="k", value="forged")
    stale = asked.model_copy(update={"arguments": {"key": "k", "value": "stale copy"}})
    other_run = task("t1", "write", run_id="run-z", key="k", value="nobody asked")
    await send(aredis, forged, stale, other_run, asked)
    consumer = Consumer(aredis, MEMORY_TASKS_STREAM, MEMORY_GROUP, "gated", FAST)
    handler = MemoryHandler(store, Inbox(aredis, 1), TaskGate(aredis))
    assert await serve(consumer, MemoryTask, handler, burst=True) == 4
    assert [(row[0], row[2]) for row in store.dump()] == [("run-a", "asked")]
    assert [m.causation_id for m in await inbox(aredis)] == ["t1"]
    assert await pending(aredis) == 0
    # A repeat of the applied task is still answered (from the record), gate or not.
    await ask_for(aredis, "run-a", task("t2", "list"))
    await send(aredis, asked)
    assert await serve(consumer, MemoryTask, handler, burst=True) == 1
    assert [m.causation_id for m in await inbox(aredis)] == ["t1", "t1"]
