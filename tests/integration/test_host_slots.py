"""Slots per (host, model) on a real Redis: the scripts that every worker shares."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from contreact_events.names import llm_host_leases_key
from contreact_llm.scheduling.host_slots import HostLimits, HostSlots, HostView, Lease, SlotTimes

pytestmark = pytest.mark.redis

HOST = "http://gpu1:11434"
TWO = HostLimits(parallel=2, max_loaded=0)
ONE_MODEL = HostLimits(parallel=1, max_loaded=1)


def slots(redis: aioredis.Redis, **times: int) -> HostSlots:
    settings = {"lease_ttl_ms": 10_000, "keep_warm_ms": 0, "drain_ms": 10_000, **times}
    return HostSlots(redis, SlotTimes(**settings))


async def lease(got: list[Lease] | str) -> Lease:
    assert isinstance(got, list) and len(got) == 1, got
    return got[0]


async def view(redis: aioredis.Redis, host: str = HOST) -> HostView:
    async with redis.pipeline(transaction=False) as pipe:
        pipe.time()
        HostSlots.queue_view(pipe, host)
        (seconds, micros), *replies = await pipe.execute()
    return HostSlots.view(host, int(seconds) * 1000 + int(micros) // 1000, replies)


async def test_at_most_parallel_calls_of_a_model(aredis: aioredis.Redis) -> None:
    shared = slots(aredis)
    first = await lease(await shared.acquire(HOST, "m", TWO))
    await lease(await shared.acquire(HOST, "m", TWO))
    assert await shared.acquire(HOST, "m", TWO) == "full"
    await lease(await shared.acquire(HOST, "other", TWO))  # another model: its own slots
    await lease(await shared.acquire("http://gpu2:11434", "m", TWO))  # another host too
    await shared.release(first)
    await lease(await shared.acquire(HOST, "m", TWO))
    assert (await view(aredis)).inflight == {"m": 2, "other": 1}


async def test_several_leases_in_one_call_never_past_the_limit(aredis: aioredis.Redis) -> None:
    shared = slots(aredis)
    three = HostLimits(parallel=3, max_loaded=1)
    first = await shared.acquire(HOST, "m", three, count=2)
    assert isinstance(first, list) and len(first) == 2 and first[0].how == "load"
    more = await shared.acquire(HOST, "m", three, count=5)
    assert isinstance(more, list) and [x.how for x in more] == ["loaded"]
    assert await shared.acquire(HOST, "m", three, count=5) == "full"
    await shared.release(*first, *more)
    assert (await view(aredis)).inflight == {}


async def test_a_dead_workers_slot_comes_back_when_its_lease_expires(
    aredis: aioredis.Redis,
) -> None:
    short = slots(aredis, lease_ttl_ms=200)
    await lease(await short.acquire(HOST, "m", ONE_MODEL))  # never released: the worker died
    assert await short.acquire(HOST, "m", ONE_MODEL) == "full"
    await asyncio.sleep(0.3)
    await lease(await short.acquire(HOST, "m", ONE_MODEL))


async def test_renewed_leases_stay_and_expired_ones_are_reported(aredis: aioredis.Redis) -> None:
    short = slots(aredis, lease_ttl_ms=300)
    kept = await lease(await short.acquire(HOST, "m", TWO))
    lost = await lease(await short.acquire(HOST, "m", TWO))
    for _ in range(3):
        await asyncio.sleep(0.15)
        assert await short.renew([kept]) == []
    assert await short.acquire(HOST, "m", TWO) != "full"  # lost's lease expired
    assert await short.renew([kept, lost]) == [lost]


async def test_a_full_host_swaps_only_an_idle_model_past_its_keep_warm_time(
    aredis: aioredis.Redis,
) -> None:
    warm = slots(aredis, keep_warm_ms=300)
    a = await lease(await warm.acquire(HOST, "a", ONE_MODEL))
    assert a.how == "load"
    assert await warm.acquire(HOST, "b", ONE_MODEL) == "no room"  # a is busy
    await warm.release(a)
    assert await warm.acquire(HOST, "b", ONE_MODEL) == "no room"  # a was used just now
    await asyncio.sleep(0.35)
    assert await warm.acquire(HOST, "b", ONE_MODEL, protect=["a"]) == "no room"  # a is wanted
    b = await lease(await warm.acquire(HOST, "b", ONE_MODEL))
    assert b.how == "swap:a"
    assert list((await view(aredis)).loaded) == ["b"]


async def test_a_model_waiting_too_long_drains_the_host(aredis: aioredis.Redis) -> None:
    shared = slots(aredis)
    limits = HostLimits(parallel=2, max_loaded=1)
    a = await lease(await shared.acquire(HOST, "a", limits))
    assert await shared.acquire(HOST, "b", limits, protect=["a"]) == "no room"
    assert await shared.acquire(HOST, "b", limits, may_drain=True) == "drain:a"
    assert (await view(aredis)).draining == {"a"}
    assert await shared.acquire(HOST, "a", limits) == "draining"  # no new calls of a
    assert await shared.acquire(HOST, "b", limits, may_drain=True) == "no room"  # once
    await shared.release(a)
    b = await lease(await shared.acquire(HOST, "b", limits, protect=["a"]))
    assert b.how == "swap:a"
    current = await view(aredis)
    assert (current.draining, list(current.loaded)) == (frozenset(), ["b"])


async def test_a_drain_request_lapses(aredis: aioredis.Redis) -> None:
    shared = slots(aredis, drain_ms=200)
    limits = HostLimits(parallel=2, max_loaded=1)
    await lease(await shared.acquire(HOST, "a", limits))
    assert await shared.acquire(HOST, "b", limits, may_drain=True) == "drain:a"
    await asyncio.sleep(0.25)
    await lease(await shared.acquire(HOST, "a", limits))


async def test_model_names_are_data(aredis: aioredis.Redis) -> None:
    odd = "we'ird\nmodel ]] -- %s"
    shared = slots(aredis)
    got = await lease(await shared.acquire(HOST, odd, TWO))
    assert (await view(aredis)).inflight == {odd: 1}
    await shared.release(got)
    assert await aredis.zcard(llm_host_leases_key(HOST)) == 0
