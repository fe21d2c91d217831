"""The Redis side against a real Redis: the run log, consumer groups, reclaim of a
dead consumer's entries, dead letters, and the archive."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import read_archive, write_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.local_redis import free_port, redis_server_argv, wait_until_answers
from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_bus.streams.consumer import Consumer, ConsumerSettings, release_consumer
from contreact_bus.streams.serving import serve, serve_batches
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.catalog import Event
from contreact_events.exceptions import CorruptEvent
from contreact_events.names import DEAD_LETTER_STREAM, run_log_key
from contreact_events.wire.tasks import MemoryTask
from tests.support.sim import T0, Sim, make_config, say
from tests.support.waits import HANG_GUARD_S

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


async def test_work_in_flight_is_not_reclaimed_while_its_worker_lives(
    aredis: aioredis.Redis,
) -> None:
    """A call longer than the reclaim idle time runs once: its claim is renewed."""
    await TaskStream(aredis, STREAM).send(task(1))
    settings = ConsumerSettings(block_ms=50, reclaim_idle_ms=300, reclaim_every_s=0.05)
    runs: list[str] = []
    stop = asyncio.Event()

    async def slow(message: MemoryTask) -> None:
        runs.append(message.task_id)
        await asyncio.sleep(1.5)  # five reclaim idle times

    async def quick(message: MemoryTask) -> None:
        runs.append(f"stolen {message.task_id}")

    worker = asyncio.create_task(
        serve(Consumer(aredis, STREAM, GROUP, "worker", settings), MemoryTask, slow, stop=stop)
    )
    await asyncio.sleep(0.2)
    thief = asyncio.create_task(
        serve(Consumer(aredis, STREAM, GROUP, "thief", settings), MemoryTask, quick, stop=stop)
    )
    await asyncio.sleep(1.6)
    stop.set()
    assert await worker == 1
    assert await thief == 0
    assert runs == ["t1"]
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_a_consumer_takes_only_what_it_can_start(aredis: aioredis.Redis) -> None:
    """With two slots busy, the other entries stay in the stream for other workers."""
    stream = TaskStream(aredis, STREAM)
    for n in range(5):
        await stream.send(task(n))
    started = asyncio.Event()
    release = asyncio.Event()

    async def busy(message: MemoryTask) -> None:
        started.set()
        await release.wait()

    stop = asyncio.Event()
    worker = asyncio.create_task(
        serve(
            Consumer(aredis, STREAM, GROUP, "w", FAST), MemoryTask, busy, concurrency=2, stop=stop
        )
    )
    await started.wait()
    await asyncio.sleep(0.2)
    summary = await aredis.xpending(STREAM, GROUP)
    assert summary["pending"] == 2  # the other three wait for any consumer
    others = await Consumer(aredis, STREAM, GROUP, "other", FAST).read(block=False)
    assert len(others) == 3
    release.set()
    stop.set()
    await worker


async def test_a_dead_letter_tells_the_hook(aredis: aioredis.Redis) -> None:
    await aredis.xadd(STREAM, {"msg": b'{"task_id": "t9", "run_id": "r"}'})
    told: list[tuple[bytes, str]] = []

    async def hook(delivery, reason: str) -> None:
        told.append((delivery.fields[b"msg"], reason))

    async def handle(message: MemoryTask) -> None:
        raise AssertionError("undecodable: never handled")

    consumer = Consumer(aredis, STREAM, GROUP, "c", FAST, on_dead_letter=hook)
    await serve(consumer, MemoryTask, handle, burst=True)
    ((payload, reason),) = told
    assert payload == b'{"task_id": "t9", "run_id": "r"}' and reason.startswith("cannot decode")


async def test_housekeeping_trims_what_is_done_and_forgets_silent_consumers(
    aredis: aioredis.Redis,
) -> None:
    stream = TaskStream(aredis, STREAM)
    for n in range(300):
        await stream.send(task(n))
    settings = ConsumerSettings(block_ms=50, batch_size=300, forget_consumer_after_s=0.05)
    gone = Consumer(aredis, STREAM, GROUP, "gone", settings)
    await gone.ensure_group()
    await gone.read(block=False, count=10)
    await gone.ack(*[eid for eid, _ in entries(await aredis.xrange(STREAM, count=10))])
    keeper = Consumer(aredis, STREAM, GROUP, "keeper", settings)
    taken = await keeper.read(block=False, count=250)
    await keeper.ack(*[d.entry_id for d in taken[:200]])  # 50 stay pending, 40 unread
    await asyncio.sleep(0.1)
    trimmed, removed = await keeper.housekeep()
    assert removed == 1  # "gone" holds nothing and went silent; "keeper" stays
    assert [c["name"] for c in await aredis.xinfo_consumers(STREAM, GROUP)] == [b"keeper"]
    left = {eid for eid, _ in entries(await aredis.xrange(STREAM))}
    assert {d.entry_id for d in taken[200:]} <= left  # pending entries are kept
    assert len(left) >= 90 and trimmed > 0  # (approximate trimming may keep a few more)
    assert await aredis.xlen(STREAM) < 300


async def test_dead_letters_are_capped(aredis: aioredis.Redis) -> None:
    settings = ConsumerSettings(block_ms=50, batch_size=500, dead_letter_maxlen=100)
    for n in range(400):
        await aredis.xadd(STREAM, {"bad": str(n)})

    async def handle(message: MemoryTask) -> None:
        raise AssertionError("never")

    await serve(Consumer(aredis, STREAM, GROUP, "c", settings), MemoryTask, handle, burst=True)
    assert await aredis.xlen(DEAD_LETTER_STREAM) < 250  # ~100, trimmed in whole nodes


async def test_a_consumer_waits_out_a_redis_restart_and_carries_on(tmp_path: Path) -> None:
    """kill -9 of Redis under a serving consumer; Redis back from its append-only file
    on the same port; the consumer handles what was pending and what comes next."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"

    def start() -> subprocess.Popen[bytes]:
        argv = redis_server_argv(port, tmp_path, appendonly=True)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_answers(url)
        return proc

    server = start()
    client = aioredis.Redis.from_url(url)
    handled: list[str] = []
    stop = asyncio.Event()
    arrived = [asyncio.Event(), asyncio.Event()]

    async def handle(message: MemoryTask) -> None:
        handled.append(message.task_id)
        arrived[len(handled) - 1].set()

    try:
        await client.config_set("appendfsync", "always")
        await TaskStream(client, STREAM).send(task(1))
        worker = asyncio.create_task(
            serve(Consumer(client, STREAM, GROUP, "c", FAST), MemoryTask, handle, stop=stop)
        )
        await asyncio.wait_for(arrived[0].wait(), HANG_GUARD_S)
        # t1's ack goes out after its handler returns (batched): killed before it is on
        # disk, t1 is rightly delivered again (at least once), which is not this test.
        deadline = time.monotonic() + HANG_GUARD_S
        while (await client.xpending(STREAM, GROUP))["pending"]:
            assert time.monotonic() < deadline, "t1 was never acked"
            await asyncio.sleep(0.02)
        server.send_signal(signal.SIGKILL)
        server.wait()
        await asyncio.sleep(1.0)  # the consumer finds Redis gone and backs off
        server = start()
        await TaskStream(client, STREAM).send(task(2))
        await asyncio.wait_for(arrived[1].wait(), HANG_GUARD_S)
        stop.set()
        await asyncio.wait_for(worker, HANG_GUARD_S)
        assert handled == ["t1", "t2"]
    finally:
        await client.aclose()
        server.kill()
        server.wait()


async def test_a_dead_consumers_tasks_are_freed_at_once(aredis: aioredis.Redis) -> None:
    """The supervisor saw the consumer's process die: its entries go to the next
    reclaim pass, not after the reclaim idle time."""
    await TaskStream(aredis, STREAM).send(task(1))
    patient = ConsumerSettings(block_ms=20, reclaim_idle_ms=600_000, reclaim_every_s=0.0)
    dead = Consumer(aredis, STREAM, GROUP, "dead-host-123", patient)
    await dead.ensure_group()
    assert len(await dead.read(block=False)) == 1
    survivor = Consumer(aredis, STREAM, GROUP, "survivor", patient)
    assert await survivor.reclaim() == []  # a minute of idle time is far away
    assert await release_consumer(aredis, STREAM, GROUP, "dead-host-123") == 1
    (taken,) = await survivor.reclaim()
    assert taken.deliveries == 2
    assert await release_consumer(aredis, "no-such-stream", GROUP, "x") == 0


async def test_the_one_loop_runs_batches_of_a_set_size_side_by_side(
    aredis: aioredis.Redis,
) -> None:
    """``serve_batches`` with a batch size and a concurrency: batches of at most that
    size, that many at once, every entry acked once its batch's handler returned."""
    stream = TaskStream(aredis, STREAM)
    for n in range(10):
        await stream.send(task(n))
    sizes: list[int] = []
    in_flight = most = 0

    async def handle(messages: list[MemoryTask]) -> None:
        nonlocal in_flight, most
        sizes.append(len(messages))
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1

    consumer = Consumer(aredis, STREAM, GROUP, "c", FAST)
    handled = await serve_batches(
        consumer, MemoryTask, handle, batch_size=3, concurrency=2, burst=True
    )
    assert handled == 10
    assert sum(sizes) == 10 and max(sizes) <= 3
    assert most == 2
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_a_batch_whose_handler_fails_is_let_go_whole_and_retried(
    aredis: aioredis.Redis,
) -> None:
    """A batch handler that raises (even a ContReActEventError: it cannot say which
    message was bad) dead-letters nothing at once: the batch is tried again."""
    stream = TaskStream(aredis, STREAM)
    for n in range(3):
        await stream.send(task(n))
    batches: list[list[str]] = []

    async def handle(messages: list[MemoryTask]) -> None:
        batches.append([m.task_id for m in messages])
        if len(batches) == 1:
            raise CorruptEvent("one of them is bad")

    consumer = Consumer(aredis, STREAM, GROUP, "c", FAST)
    assert await serve_batches(consumer, MemoryTask, handle, burst=True) == 0
    await asyncio.sleep(0.08)  # past the reclaim idle time
    assert await serve_batches(consumer, MemoryTask, handle, burst=True) == 3
    assert batches == [["t0", "t1", "t2"]] * 2
    assert await aredis.xlen(DEAD_LETTER_STREAM) == 0
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0


async def test_a_message_its_handler_cannot_process_is_dead_lettered_at_once(
    aredis: aioredis.Redis,
) -> None:
    """Batches of one (``serve``): a ContReActEventError is that message's; its entry
    goes to the dead letters on the first delivery, the next one is handled."""
    await TaskStream(aredis, STREAM).send(task(1))
    await TaskStream(aredis, STREAM).send(task(2))
    attempts: list[str] = []

    async def handle(message: MemoryTask) -> None:
        attempts.append(message.task_id)
        if message.task_id == "t1":
            raise CorruptEvent("not a task this service can apply")

    consumer = Consumer(aredis, STREAM, GROUP, "c", FAST)
    assert await serve(consumer, MemoryTask, handle, burst=True) == 1
    assert attempts == ["t1", "t2"]
    (letter,) = entries(await aredis.xrange(DEAD_LETTER_STREAM))
    assert letter[1][b"reason"].startswith(b"cannot process: ")
    assert (await aredis.xpending(STREAM, GROUP))["pending"] == 0
