"""LLM workers on a real Redis against an Ollama stand-in that schedules like Ollama:
limits shared by every worker, a slow model beside a fast one, loaded models kept
busy, and a dead worker's slot and task taken over."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.connection import connect
from contreact_bus.llm_routes import llm_task_stream, route_of
from contreact_bus.streams.consumer import Consumer
from contreact_events.catalog.chat import ChatMessage
from contreact_events.names import LLM_GROUP, LLM_ROUTES, llm_host_leases_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.handler import build_handler
from contreact_llm.main import build_scheduler, run
from contreact_llm.scheduling.host_slots import HostSlots
from contreact_llm.scheduling.scheduler import ChatScheduler, SchedulerSettings
from contreact_llm.settings import LLMWorkerSettings
from tests.support.inbox import INBOX, use_one_shard
from tests.support.ollama_host import running_ollama_host
from tests.support.orchestration import ask_for
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def chat(run_id: str, model: str, host: str, **changes: Any) -> LLMTask:
    fields: dict[str, Any] = {"hosts": (host,), **changes}
    return LLMTask(
        kind="chat",
        task_id=f"{run_id}/c1/s1",
        run_id=run_id,
        backend="ollama",
        model=model,
        host=host,
        messages=(ChatMessage(role="user", content="Cycle 1 begins."),),
        **fields,
    )


def worker(redis_url: str, name: str, host: str, **changes: Any) -> LLMWorkerSettings:
    fields: dict[str, Any] = {
        "redis_url": redis_url,
        "consumer_name": name,
        "hosts": {host: {"parallel": 2, "max_loaded_models": 2}},
        "poll_s": 0.1,
        "backoff_base_s": 0.001,
        "keep_warm_s": 0.2,
        **changes,
    }
    return LLMWorkerSettings(**fields)


async def send(redis: aioredis.Redis, *tasks: LLMTask) -> None:
    """Queue tasks as an orchestrator would: each recorded as its run's pending task."""
    for task in tasks:
        await ask_for(redis, task.run_id, task)
        await llm_task_stream(redis, task).send(task)


async def answers(redis: aioredis.Redis) -> dict[str, InboxMessage]:
    entries = await redis.xrange(INBOX) or []
    messages = [message_from_fields(InboxMessage, fields or {}) for _id, fields in entries]
    return {m.run_id: m for m in messages}


async def test_a_limit_of_two_per_host_holds_across_three_workers(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    with running_ollama_host(["m"], num_parallel=8, latency_s=lambda _m: 0.15) as ollama:
        await send(aredis, *(chat(f"run-{n}", "m", ollama.host) for n in range(8)))
        started = await asyncio.gather(
            *(run(worker(redis_url, f"w{n}", ollama.host), burst=True) for n in range(3))
        )
        assert ollama.max_in_flight == 2  # the server never saw a third call at once
        assert len(ollama.calls) == 8
    assert sum(started) == 8
    done = await answers(aredis)
    assert sorted(done) == [f"run-{n}" for n in range(8)]
    assert {m.kind for m in done.values()} == {"LLMResponded"}
    assert await aredis.zcard(llm_host_leases_key(ollama.host)) == 0  # every slot came back


async def test_loaded_models_are_kept_busy_before_another_is_loaded(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    models = ["a", "b", "c"]
    with running_ollama_host(
        models, num_parallel=2, max_loaded=1, load_s=0.3, latency_s=lambda _m: 0.05
    ) as ollama:
        await send(aredis, *(chat(f"{m}-{n}", m, ollama.host) for n in range(4) for m in models))
        settings = worker(
            redis_url,
            "w1",
            ollama.host,
            hosts={ollama.host: {"parallel": 2, "max_loaded_models": 1}},
        )
        await run(settings, burst=True)
        assert len(ollama.calls) == 12
        assert sorted(model for _t, model in ollama.loads) == models  # one load each
        assert ollama.max_loaded_seen == 1
        for one, other in zip(ollama.calls, ollama.calls[1:], strict=False):
            if one.model != other.model:  # never two models at once on the host
                assert one.end <= other.start or other.end <= one.start


async def test_a_slow_model_does_not_hold_up_a_fast_one(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    latency = {"slow": 1.0, "fast": 0.02}
    with running_ollama_host(
        ["slow", "fast"], num_parallel=4, max_loaded=2, latency_s=latency.__getitem__
    ) as ollama:
        await send(aredis, *(chat(f"slow-{n}", "slow", ollama.host) for n in range(6)))
        await send(aredis, *(chat(f"fast-{n}", "fast", ollama.host) for n in range(6)))
        await run(worker(redis_url, "w1", ollama.host, concurrency=4), burst=True)
    slow = sorted(c.end for c in ollama.calls if c.model == "slow")
    fast_done = max(c.end for c in ollama.calls if c.model == "fast")
    # Told by the order of the calls, not by wall times (a busy machine stretches them):
    # the fast model's six calls are all answered while the slow model's first calls are
    # still running, not queued behind the six slow ones.
    assert len(slow) == 6
    assert sum(end < fast_done for end in slow) <= 2, (fast_done, slow)


async def test_a_dead_workers_slot_and_task_are_taken_over(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    with running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 1.5) as ollama:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "CONTREACT_LLM_CONSUMER_NAME": "doomed",
            "CONTREACT_LLM_HOSTS": json.dumps({ollama.host: {"parallel": 1}}),
            "CONTREACT_LLM_LEASE_TTL_S": "1",
            "CONTREACT_LLM_RECLAIM_IDLE_MS": "1000",
        }
        log_path = tmp_path / "doomed.log"
        with log_path.open("wb") as log:
            doomed = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "contreact_llm", env=env, cwd=ROOT, stdout=log, stderr=log
            )
        try:
            await send(aredis, chat("run-1", "m", ollama.host))
            deadline = time.monotonic() + HANG_GUARD_S
            while ollama.in_flight == 0:  # the call has reached the host
                assert time.monotonic() < deadline, log_path.read_text()
                await asyncio.sleep(0.02)
            doomed.send_signal(signal.SIGKILL)
            await doomed.wait()
        finally:
            if doomed.returncode is None:
                doomed.kill()
                await doomed.wait()
        killed_at = time.monotonic()
        assert await aredis.zcard(llm_host_leases_key(ollama.host)) == 1  # still held
        heir = worker(
            redis_url,
            "heir",
            ollama.host,
            hosts={ollama.host: {"parallel": 1}},
            reclaim_idle_ms=1000,
        )
        await _serve_until(heir, aredis, "run-1")
        waited = time.monotonic() - killed_at
    assert waited > 0.5  # the dead worker's claim was waited out, not taken at once
    (message,) = (await answers(aredis)).values()
    assert message.kind == "LLMResponded" and message.causation_id == "run-1/c1/s1"
    assert await aredis.zcard(llm_host_leases_key(ollama.host)) == 0


async def test_a_task_a_dead_worker_left_is_taken_before_newer_ones(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """One slot, a task left pending by a worker that died, newer tasks queued behind
    it: the left one goes first. (Reading new entries first starved it for as long as
    another run kept its slot busy: a kill -9 of the LLM worker held three of four runs
    for minutes.)"""
    with running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 0.05) as ollama:
        old = chat("run-old", "m", ollama.host)
        await send(aredis, old)
        stream = route_of(old).stream
        await Consumer(aredis, stream, LLM_GROUP, "ghost").ensure_group()
        assert await aredis.xreadgroup(LLM_GROUP, "ghost", {stream: ">"}, count=1)
        await asyncio.sleep(0.4)  # the ghost never refreshes its claim: it is silent
        await send(aredis, *(chat(f"run-new-{n}", "m", ollama.host) for n in range(3)))
        heir = worker(
            redis_url,
            "heir",
            ollama.host,
            hosts={ollama.host: {"parallel": 1}},
            concurrency=1,
            reclaim_idle_ms=300,
        )
        await _serve_until(heir, aredis, "run-new-2")
    entries = await aredis.xrange(INBOX) or []
    order = [message_from_fields(InboxMessage, fields or {}).run_id for _id, fields in entries]
    assert order[0] == "run-old", order
    assert sorted(order) == ["run-new-0", "run-new-1", "run-new-2", "run-old"]


async def test_housekeeping_trims_the_routes_streams(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Every acked chat task carries its run's history: a route's stream must not keep
    them (it did: 4.7 MB of one route's stream outlived every run in
    bench.services.redis_memory)."""
    with running_ollama_host(["m"], num_parallel=8, latency_s=lambda _m: 0.0) as ollama:
        tasks = [chat(f"run-{n}", "m", ollama.host) for n in range(250)]
        await send(aredis, *tasks)
        settings = worker(redis_url, "w1", ollama.host, concurrency=8)
        assert await run(settings, burst=True) == 250
    stream = route_of(tasks[0]).stream
    assert await aredis.xlen(stream) == 250  # acked, still there
    handler = await build_handler(aredis, settings)
    try:
        trimmed, _removed = await build_scheduler(aredis, handler, settings).housekeep()
    finally:
        await handler.aclose()
    assert trimmed > 0 and await aredis.xlen(stream) < 250  # (trimmed in whole nodes)


async def test_a_serving_worker_keeps_house_on_its_own(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """The same trimming from the worker's keep loop, with nobody calling it."""
    with running_ollama_host(["m"], num_parallel=8, latency_s=lambda _m: 0.0) as ollama:
        tasks = [chat(f"run-{n}", "m", ollama.host) for n in range(250)]
        await send(aredis, *tasks)
        settings = worker(redis_url, "w1", ollama.host, concurrency=8, reclaim_idle_ms=600)
        handler = await build_handler(aredis, settings)
        scheduler = ChatScheduler(
            aredis,
            handler,
            HostSlots(aredis, settings.slot_times),
            settings.host_limits,
            SchedulerSettings(
                consumer_name="w1", reclaim_idle_ms=600, poll_s=0.1, housekeeping_every_s=0.3
            ),
        )
        stop = asyncio.Event()
        serving = asyncio.create_task(scheduler.run(stop))
        stream = route_of(tasks[0]).stream
        try:
            deadline = time.monotonic() + HANG_GUARD_S
            while len(await answers(aredis)) < 250 or await aredis.xlen(stream) >= 250:
                assert time.monotonic() < deadline and not serving.done()
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            await serving
            await handler.aclose()
    assert await aredis.xlen(stream) < 250


async def _serve_until(settings: LLMWorkerSettings, redis: aioredis.Redis, run_id: str) -> None:
    """A worker that keeps going (burst would stop at once: nothing is *waiting*, the
    task is pending on the dead worker) until ``run_id`` is answered."""
    stop = asyncio.Event()
    serving = asyncio.create_task(run(settings, stop=stop))
    deadline = time.monotonic() + HANG_GUARD_S
    while run_id not in await answers(redis):
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.05)
    stop.set()
    await serving


async def test_routes_are_registered_per_model_and_pool(aredis: aioredis.Redis) -> None:
    one = chat("r1", "m", "http://a:1")
    pool = chat("r2", "m", "http://a:1", hosts=("http://a:1", "http://b:1"))
    await send(aredis, one, pool, chat("r3", "other", "http://a:1"))
    routes = {k.decode(): json.loads(v) for k, v in (await aredis.hgetall(LLM_ROUTES)).items()}
    assert len(routes) == 3
    assert sorted(r["hosts"] for r in routes.values()) == [
        ["http://a:1"],
        ["http://a:1"],
        ["http://a:1", "http://b:1"],
    ]
    assert all(k.startswith("ollama/") for k in routes)


async def test_the_chat_loop_keeps_going_when_its_connections_are_dropped(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    with running_ollama_host(["m"], num_parallel=2, latency_s=lambda _m: 0.01) as ollama:
        settings = worker(redis_url, "w1", ollama.host)
        client = await connect(redis_url)
        handler = await build_handler(client, settings)
        chats = build_scheduler(client, handler, settings)
        stop = asyncio.Event()
        serving = asyncio.create_task(chats.run(stop))
        try:
            await send(aredis, chat("before", "m", ollama.host))
            await _until_answered(aredis, "before", serving)
            # every connection of the worker's, its wake-up subscription included
            await aredis.client_kill_filter(_type="normal", skipme=True)
            await aredis.client_kill_filter(_type="pubsub")
            await send(aredis, chat("after", "m", ollama.host))
            await _until_answered(aredis, "after", serving)
        finally:
            stop.set()
            await serving
            await handler.aclose()
            await client.aclose()


async def _until_answered(redis: aioredis.Redis, run_id: str, serving: asyncio.Task[int]) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while run_id not in await answers(redis):
        assert time.monotonic() < deadline and not serving.done(), serving
        await asyncio.sleep(0.05)


async def test_a_pool_of_hosts_serves_one_model(aredis: aioredis.Redis, redis_url: str) -> None:
    with (
        running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 0.3) as one,
        running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 0.3) as two,
    ):
        pool = (one.host, two.host)
        limits = {host: {"parallel": 1, "max_loaded_models": 1} for host in pool}
        await send(aredis, *(chat(f"run-{n}", "m", one.host, hosts=pool) for n in range(4)))
        await run(worker(redis_url, "w1", one.host, hosts=limits), burst=True)
        assert (len(one.calls), len(two.calls)) == (2, 2)  # both hosts served
        assert one.max_in_flight == two.max_in_flight == 1
        # at the same time: each call on one host overlaps one on the other
        for call in one.calls:
            assert any(c.start < call.end and call.start < c.end for c in two.calls)
    assert sorted(await answers(aredis)) == [f"run-{n}" for n in range(4)]


async def test_renewals_do_not_cry_wolf_over_calls_that_just_ended(
    aredis: aioredis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Leases are renewed while calls keep ending; one released meanwhile is not lost."""
    with running_ollama_host(["m"], num_parallel=64, latency_s=lambda _m: 0.02) as ollama:
        await send(aredis, *(chat(f"run-{n}", "m", ollama.host) for n in range(300)))
        many = {ollama.host: {"parallel": 20}}
        settings = worker(redis_url, "w1", ollama.host, hosts=many, lease_ttl_s=1.5)
        await asyncio.wait_for(run(settings, burst=True), 60)
    assert len(ollama.calls) == 300
    assert not [r for r in caplog.records if "had expired" in r.getMessage()]


async def test_a_bell_starts_its_call_without_a_scan_and_a_limited_host_still_gets_one(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Issue 20: a serving worker that left nothing waiting goes from a task's bell
    straight to a slot and the entry (no scan of the routes), on a host that holds any
    number of models; on a host with a model limit, placement needs the scan's view, so
    the bell leads to a scan as before. Full polls are far apart here, so every scan
    counted is one a bell asked for."""
    with running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 0.0) as ollama:
        free_host = ollama.host
        limited_host = ollama.host.replace("127.0.0.1", "localhost")
        limits = {
            free_host: {"parallel": 4, "max_loaded_models": 0},
            limited_host: {"parallel": 4, "max_loaded_models": 2},
        }
        settings = worker(redis_url, "w1", free_host, hosts=limits, poll_s=30.0)
        handler = await build_handler(aredis, settings)
        scheduler = build_scheduler(aredis, handler, settings)
        scans = 0
        scan = scheduler._routes.scan

        async def counted(*, full: bool = True) -> Any:
            nonlocal scans
            scans += 1
            return await scan(full=full)

        scheduler._routes.scan = counted  # type: ignore[method-assign]
        stop = asyncio.Event()
        serving = asyncio.create_task(scheduler.run(stop))

        async def answered(run_id: str) -> None:
            deadline = time.monotonic() + HANG_GUARD_S
            while run_id not in await answers(aredis):
                assert time.monotonic() < deadline and not serving.done()
                await asyncio.sleep(0.02)

        try:
            await send(aredis, chat("r1", "m", free_host))  # a new route: the full look
            await answered("r1")
            await asyncio.sleep(0.2)  # the bell's own look is over
            before = scans
            await send(aredis, chat("r2", "m", free_host), chat("r3", "m", free_host))
            await answered("r2")
            await answered("r3")
            assert scans == before  # both started from their bells alone
            await send(aredis, chat("r4", "m", limited_host))
            await answered("r4")
            assert scans > before  # a host with a model limit is looked at first
        finally:
            stop.set()
            await serving
            await handler.aclose()
    assert {m.kind for m in (await answers(aredis)).values()} == {"LLMResponded"}


async def test_more_calls_at_once_than_a_client_pool_holds_all_run_together(
    aredis: aioredis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """240 calls at once on a host allowed 240: more than redis-py's default pool (100
    connections) and httpx's (100 a client) hold. The gate checks of a wave of calls
    wait for a Redis connection instead of failing with "Too many connections" and
    leaving their tasks pending for a later claim (issue 20: an experiment of 200 runs
    lost 5-18 s on a fifth of its calls that way), and more than a hundred calls are on
    the host at once (httpx's cap held the rest back until others ended)."""
    count = 240
    with running_ollama_host(["m"], num_parallel=count, latency_s=lambda _m: 2.0) as ollama:
        await send(aredis, *(chat(f"run-{n}", "m", ollama.host) for n in range(count)))
        settings = worker(
            redis_url,
            "w1",
            ollama.host,
            concurrency=count,
            hosts={ollama.host: {"parallel": count, "max_loaded_models": 0}},
        )
        started = await run(settings, burst=True)
        assert len(ollama.calls) == count
        assert ollama.max_in_flight > 120
    assert started == count
    done = await answers(aredis)
    assert len(done) == count and {m.kind for m in done.values()} == {"LLMResponded"}
    assert "stays pending" not in caplog.text
    assert "Too many connections" not in caplog.text


class _LossyPubSub(aioredis.client.PubSub):
    """A pub/sub whose read loses a cancellation, as redis-py's can when the read's own
    timeout and the cancel land together: the read returns nothing and goes on."""

    async def get_message(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().get_message(*args, **kwargs)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            return None


class _LossyRedis(aioredis.Redis):
    def pubsub(self, **kwargs: Any) -> aioredis.client.PubSub:
        return _LossyPubSub(self.connection_pool, **kwargs)


async def test_a_burst_ends_even_when_its_listener_loses_the_cancel(redis_url: str) -> None:
    """Broken on purpose: a burst with nothing to do returns although the wake-up
    listener swallows the cancel it is sent (the loop's end tells it too). Before, a
    full run of the suite hung for 20 minutes in such a burst, its listener pinging."""
    redis = _LossyRedis.from_url(redis_url)
    settings = worker(redis_url, "w1", "http://127.0.0.1:9")
    handler = await build_handler(redis, settings)
    scheduler = build_scheduler(redis, handler, settings)
    stop = asyncio.Event()
    try:
        running = asyncio.create_task(scheduler.run(stop, burst=True))
        done, _ = await asyncio.wait({running}, timeout=10)
        if not done:  # end it the way a stop does, so the test fails instead of hanging
            stop.set()
            await asyncio.wait({running}, timeout=10)
        assert done, "a burst with nothing to do did not return within 10 s"
        assert running.result() == 0
    finally:
        await handler.aclose()
        await redis.aclose()
