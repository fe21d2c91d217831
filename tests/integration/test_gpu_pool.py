"""A model's pool of hosts, with real LLM workers on a real Redis and Ollama stand-ins
on real sockets (``tests/support/ollama_host.py``): a run's calls stick to one host,
runs spread evenly, each host's limit holds, a call waits for its busy host at most
``pool_stick_wait_s``, a host that refuses connections or stops answering is passed
over (the call moves, the host is held down), and a pool with every host down answers
with one line naming them (an analysis: the heuristic, with that line as its reason)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.llm_routes import llm_task_stream, route_of
from contreact_bus.local_redis import free_port
from contreact_events.catalog.exchange import Exchange
from contreact_events.cognition.model_answer import analysis_json_schema
from contreact_events.core.exchange_prompt import analysis_messages
from contreact_events.names import ACTIVE_RUNS, llm_host_down_key, llm_route_pins_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.main import run
from contreact_llm.scheduling.pool import choose_host
from contreact_llm.scheduling.pool_state import PIN_IDLE_MS, PoolState, pin_value, pinned_hosts
from contreact_llm.settings import LLMWorkerSettings
from tests.support.inbox import INBOX, use_one_shard
from tests.support.ollama_host import running_ollama_host
from tests.support.orchestration import ask_for
from tests.support.pool_tasks import pool_chat, pool_worker
from tests.support.silent_host import silent_host

pytestmark = pytest.mark.redis


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def chat(run_id: str, pool: tuple[str, ...], step: int = 1) -> LLMTask:
    return pool_chat(run_id, pool, "ollama", "Cycle 1 begins.", step)


def worker(redis_url: str, name: str, pool: tuple[str, ...], **changes: Any) -> LLMWorkerSettings:
    return pool_worker(redis_url, name, pool, 1, 1, **changes)


async def send(redis: aioredis.Redis, *tasks: LLMTask) -> None:
    """Queue tasks as an orchestrator would (each its run's pending task; runs active)."""
    for task in tasks:
        await redis.sadd(ACTIVE_RUNS, task.run_id)
        await ask_for(redis, task.run_id, task)
        await llm_task_stream(redis, task).send(task)


async def answers(redis: aioredis.Redis) -> dict[str, InboxMessage]:
    """Each task's answer, by task id."""
    entries = await redis.xrange(INBOX) or []
    messages = [message_from_fields(InboxMessage, fields or {}) for _id, fields in entries]
    return {m.causation_id or "": m for m in messages}


async def pin(redis: aioredis.Redis, key: str, hosts: dict[str, str]) -> None:
    """Pin runs to hosts now (the server's clock), as a placement does."""
    seconds, micros = await redis.time()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    await redis.hset(key, mapping={run: pin_value(host, now_ms) for run, host in hosts.items()})


def host_of(message: InboxMessage) -> str:
    assert message.kind == "LLMResponded", message
    return str(message.data["host"])


async def test_runs_spread_evenly_stick_to_their_host_and_each_host_keeps_its_limit(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Eight runs over two hosts of one call at a time each, two workers: four runs a
    host; a run's second call goes to the host of its first; neither host ever sees
    two calls at once."""
    latency = {"latency_s": lambda _m: 0.1}
    with (
        running_ollama_host(["m"], num_parallel=4, **latency) as one,
        running_ollama_host(["m"], num_parallel=4, **latency) as two,
    ):
        pool = (one.host, two.host)
        runs = [f"run-{n}" for n in range(8)]
        first: dict[str, str] = {}
        for step in (1, 2):
            await send(aredis, *(chat(r, pool, step) for r in runs))
            await asyncio.gather(
                *(run(worker(redis_url, f"w{n}", pool), burst=True) for n in range(2))
            )
            done = await answers(aredis)
            hosts = {r: host_of(done[f"{r}/c1/s{step}"]) for r in runs}
            if step == 1:
                first = hosts
        assert hosts == first  # every run's second call went to the host of its first
        assert Counter(first.values()) == {one.host: 4, two.host: 4}
        assert (one.max_in_flight, two.max_in_flight) == (1, 1)
        assert (len(one.calls), len(two.calls)) == (8, 8)
    pins = await aredis.hgetall(llm_route_pins_key(route_of(chat("x", pool)).id))
    assert pinned_hosts(pins) == first


async def test_a_host_that_refuses_connections_is_held_down_and_its_calls_move(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with running_ollama_host(["m"], num_parallel=4) as alive:
        pool = (dead, alive.host)
        runs = [f"run-{n}" for n in range(6)]
        await send(aredis, *(chat(r, pool) for r in runs))
        settings = worker(redis_url, "w1", pool, hosts={h: {"parallel": 2} for h in pool})
        await run(settings, burst=True)
        done = await answers(aredis)
        assert {host_of(done[f"{r}/c1/s1"]) for r in runs} == {alive.host}
        assert len(alive.calls) == 6
    why = await aredis.get(llm_host_down_key(dead))
    assert why is not None and b"does not answer at" in why
    assert 0 < await aredis.pttl(llm_host_down_key(dead)) <= 30_000


async def test_a_pool_whose_hosts_are_all_down_fails_the_call_with_one_line(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    pool = (f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}")
    await send(aredis, chat("lonely", pool))
    await run(worker(redis_url, "w1", pool), burst=True)
    failed = (await answers(aredis))["lonely/c1/s1"]
    assert failed.kind == "LLMFailed"
    error = str(failed.data["error"])
    assert "\n" not in error
    assert error.startswith("every host of the pool for model 'm' is down")
    assert all(host in error for host in pool) and "ollama serve" in error


async def test_a_call_waits_for_its_busy_host_then_a_free_one_serves_it_and_the_pin_stays(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Two runs pinned to one host of one call at a time (a slow one): the second call
    waits for it at most ``pool_stick_wait_s``, then the idle host serves it; both runs
    keep their pin. With a long wait, both calls are served by their host, one after
    the other."""
    with (
        running_ollama_host(["m"], num_parallel=4, latency_s=lambda _m: 1.0) as busy,
        running_ollama_host(["m"], num_parallel=4) as idle,
    ):
        pool = (busy.host, idle.host)
        pins = llm_route_pins_key(route_of(chat("x", pool)).id)
        for step, wait_s, expected in ((1, 0.2, {busy.host, idle.host}), (2, 60.0, {busy.host})):
            await pin(aredis, pins, {"run-a": busy.host, "run-b": busy.host})
            await send(aredis, chat("run-a", pool, step), chat("run-b", pool, step))
            await run(worker(redis_url, "w1", pool, pool_stick_wait_s=wait_s), burst=True)
            done = await answers(aredis)
            served = {host_of(done[f"{r}/c1/s{step}"]) for r in ("run-a", "run-b")}
            assert served == expected, step
            assert pinned_hosts(await aredis.hgetall(pins)) == {
                "run-a": busy.host,
                "run-b": busy.host,
            }
        assert busy.max_in_flight == 1


async def test_an_analysis_on_a_pool_whose_hosts_are_all_down_gets_the_heuristic(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """An exchange's analysis is answered as its kind is, never as a failed call: the
    heuristic stands in, with the one line as its reason."""
    pool = (f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}")
    exchange = Exchange(agent_message="Is anyone there?", operator_reply="Yes, I am.")
    task = chat("asking", pool).model_copy(
        update={
            "kind": "analysis",
            "tools": (),
            "json_schema": analysis_json_schema(),
            "messages": analysis_messages(exchange, ()),
        }
    )
    await send(aredis, task)
    await run(worker(redis_url, "w1", pool), burst=True)
    answer = (await answers(aredis))[task.task_id]
    assert answer.kind == "OperatorMessageAnalyzed", answer
    reason = str(answer.data["fallback_reason"])
    assert "every host of the pool for model 'm' is down" in reason
    assert all(host in reason for host in pool)


async def test_a_host_that_stops_answering_is_held_down_after_the_calls_timeout(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """A host that accepts connections and never answers (a wedged server): the runs
    pinned to it wait ``timeout_s``, then move; the host is held down for the others."""
    with silent_host() as wedged, running_ollama_host(["m"], num_parallel=4) as alive:
        pool = (wedged.url, alive.host)
        pins = llm_route_pins_key(route_of(chat("x", pool)).id)
        await pin(aredis, pins, {"run-a": wedged.url, "run-b": wedged.url})
        tasks = [chat(r, pool).model_copy(update={"timeout_s": 1.0}) for r in ("run-a", "run-b")]
        await send(aredis, *tasks)
        await run(worker(redis_url, "w1", pool), burst=True)
        done = await answers(aredis)
        assert {host_of(done[t.task_id]) for t in tasks} == {alive.host}
        assert wedged.accepted >= 1
    why = await aredis.get(llm_host_down_key(wedged.url))
    assert why is not None and b"did not answer within the call's timeout" in why
    assert set(pinned_hosts(await aredis.hgetall(pins)).values()) == {alive.host}


async def test_the_placement_script_applies_the_pure_policy(aredis: aioredis.Redis) -> None:
    """``PoolState.place`` (one Lua script) against ``pool.choose_host`` on random
    states: live pins, idle ones (past ``PIN_IDLE_MS``: not counted, dropped), a run's
    own pin up or down, hosts down."""
    hosts = tuple(f"http://gpu{n}:11434" for n in range(4))
    chooser = random.Random(32)
    state = PoolState(aredis)
    seconds, _micros = await aredis.time()
    now_ms = int(seconds) * 1000
    for case in range(60):
        key = llm_route_pins_key(f"case-{case}")
        live = {f"r{n}": chooser.choice(hosts) for n in range(chooser.randint(0, 12))}
        idle = {f"old{n}": chooser.choice(hosts) for n in range(chooser.randint(0, 4))}
        mapping: dict[Any, Any] = {r: pin_value(h, now_ms) for r, h in live.items()}
        mapping |= {r: pin_value(h, now_ms - PIN_IDLE_MS - 1000) for r, h in idle.items()}
        if mapping:
            await aredis.hset(key, mapping=mapping)
        down = {h: "refused" for h in hosts if chooser.random() < 0.3}
        run_id = chooser.choice([*live, "new-run"])
        others = {r: h for r, h in live.items() if r != run_id}
        expected = choose_host(
            run_id, hosts, pin=live.get(run_id), down=down, pinned=Counter(others.values())
        )
        placed = await state.place(f"case-{case}", hosts, run_id, down)
        assert placed.host == expected, case
        pins = pinned_hosts(await aredis.hgetall(key))
        if expected is not None:
            assert pins[run_id] == expected
        if expected != live.get(run_id):  # placed anew: the idle pins were dropped
            assert not set(idle) & set(pins)
