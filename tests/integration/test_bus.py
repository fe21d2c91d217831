"""The Redis side against a real Redis: the run log, consumer groups, reclaim of a
dead consumer's entries, dead letters, and the archive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import read_archive, write_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_bus.task_stream import Consumer, ConsumerSettings, TaskStream, serve
from contreact_events.catalog import Event
from contreact_events.exceptions import CorruptEvent
from contreact_events.names import DEAD_LETTER_STREAM, run_log_key
from contreact_events.tasks import MemoryTask
from tests.support.sim import T0, Sim, make_config, say

pytestmark = pytest.mark.redis

STREAM, GROUP = "tasks:test", "testers"
FAST = ConsumerSettings(
    block_ms=50, batch_size=10, reclaim_idle_ms=50, reclaim_every_s=0.0, max_deliveries=3
)


def long_log(cycles: int = 40) -> list[Event]:
    sim = Sim(make_config(cycle_count=cycles))
    sim.drive(
        [say("", ("write", {"key": "k", "value": "v" * 50}), ("list", {})), say("a reflection")]
    )
    return sim.log


def task(n: int) -> MemoryTask:
    return MemoryTask(task_id=f"t{n}", run_id="r", tool="list", arguments={}, ts=T0)


async def test_run_log_appends_atomically_and_reads_back_in_order(aredis: aioredis.Redis) -> None:
    log = RunLog(aredis)
    events = long_log(100)
    assert len(events) > 1000  # more than one XRANGE page
    for start in range(0, len(events), 300):
        await log.append("run-1", events[start : start + 300])
    assert await log.length("run-1") == len(events)
    assert await log.events("run-1") == events
    assert [e for _, e in await log.read("run-1", limit=5)] == events[:5]
    first_id, _ = (await log.read("run-1", limit=1))[0]
    assert [e for _, e in await log.read("run-1", after=first_id, limit=2)] == events[1:3]


async def test_follow_returns_new_entries_as_they_arrive(aredis: aioredis.Redis) -> None:
    log = RunLog(aredis)
    events = long_log(1)
    await log.append("run-1", events[:2])
    last = await log.last_id("run-1")
    waiter = asyncio.create_task(log.follow("run-1", last, block_ms=2000))
    await asyncio.sleep(0.05)
    await log.append("run-1", events[2:4])
    assert [e for _, e in await waiter] == events[2:4]


async def test_a_corrupt_run_log_entry_is_a_named_error(aredis: aioredis.Redis) -> None:
    log = RunLog(aredis)
    await log.append("run-1", long_log(1)[:2])
    bad_id = await aredis.xadd(run_log_key("run-1"), {"type": "RunStarted", "event": "{oops"})
    with pytest.raises(CorruptEvent, match=f"entry {bad_id.decode()}: not valid JSON"):
        await log.events("run-1")


async def test_competing_consumers_share_the_work_once(aredis: aioredis.Redis) -> None:
    stream = TaskStream(aredis, STREAM)
    for n in range(40):
        await stream.send(task(n))
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def handler(name: str):
        async def handle(message: MemoryTask) -> None:
            seen[name].append(message.task_id)
            await asyncio.sleep(0)

        return handle

    await asyncio.gather(
        *(
            serve(Consumer(aredis, STREAM, GROUP, n, FAST), MemoryTask, handler(n), burst=True)
            for n in ("a", "b")
        )
    )
    everything = seen["a"] + seen["b"]
    assert sorted(everything) == sorted(f"t{n}" for n in range(40))
    assert len(set(everything)) == 40
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_a_dead_consumers_entries_are_reclaimed_by_another(aredis: aioredis.Redis) -> None:
    await TaskStream(aredis, STREAM).send(task(1))
    dead = Consumer(aredis, STREAM, GROUP, "dead", FAST)
    await dead.ensure_group()
    taken = await dead.read(block=False)
    assert len(taken) == 1  # read, never acked: the consumer "died"
    patient = ConsumerSettings(reclaim_idle_ms=60_000)
    assert await Consumer(aredis, STREAM, GROUP, "patient", patient).reclaim() == []
    await asyncio.sleep(0.1)  # longer than reclaim_idle_ms
    handled: list[str] = []

    async def handle(message: MemoryTask) -> None:
        handled.append(message.task_id)

    survivor = Consumer(aredis, STREAM, GROUP, "survivor", FAST)
    assert await serve(survivor, MemoryTask, handle, burst=True) == 1
    assert handled == ["t1"]
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_undecodable_entries_go_to_the_dead_letters(aredis: aioredis.Redis) -> None:
    await aredis.xadd(STREAM, {"msg": b'{"task_id": 5}'})
    await aredis.xadd(STREAM, {"something": b"else"})
    await TaskStream(aredis, STREAM).send(task(2))
    handled: list[str] = []

    async def handle(message: MemoryTask) -> None:
        handled.append(message.task_id)

    await serve(Consumer(aredis, STREAM, GROUP, "c", FAST), MemoryTask, handle, burst=True)
    assert handled == ["t2"]  # the bad entries did not block the good one
    letters = entries(await aredis.xrange(DEAD_LETTER_STREAM))
    assert len(letters) == 2
    reasons = [fields[b"reason"].decode() for _, fields in letters]
    assert all(r.startswith("cannot decode") for r in reasons)
    assert letters[0][1][b"field:msg"] == b'{"task_id": 5}'  # the payload is kept
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_an_entry_that_keeps_failing_is_dead_lettered(aredis: aioredis.Redis) -> None:
    await TaskStream(aredis, STREAM).send(task(3))
    attempts = 0

    async def handle(message: MemoryTask) -> None:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("disk on fire")

    consumer = Consumer(aredis, STREAM, GROUP, "c", FAST)
    for _ in range(8):  # each pass: fail, wait past the idle time, reclaim
        await serve(consumer, MemoryTask, handle, burst=True)
        await asyncio.sleep(0.08)
    assert attempts == FAST.max_deliveries
    (letter,) = entries(await aredis.xrange(DEAD_LETTER_STREAM))
    assert b"delivered 4 times" in letter[1][b"reason"]
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_the_archive_serves_a_run_redis_no_longer_holds(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    events = long_log(2)
    write_archive(tmp_path, "run-1", events)
    assert read_archive(tmp_path, "run-1") == events
    assert await load_events(aredis, tmp_path, "run-1") == events
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        await load_events(aredis, tmp_path, "nope")
    (tmp_path / "run-2.events.jsonl").write_text('{"broken\n')
    with pytest.raises(CorruptEvent, match=r"run-2\.events\.jsonl:1"):
        read_archive(tmp_path, "run-2")
