"""The Redis side of a pool (``pool``): each run's pin, and the hosts held down.

A route's pins are a hash ``run id -> host`` (``llm_route_pins_key``); a host held down
is a string with its last error that expires after ``host_down_s``
(``llm_host_down_key``), so a host comes back by itself. Every worker reads and writes
the same keys: a run keeps its host whichever worker takes its call. A placement is a
transaction on the route's pins (``WATCH``): two workers placing runs at once see each
other's pins, so the runs spread evenly. Pins of ended runs are dropped when a run is
placed anew (they no longer count against their host)."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

from contreact_bus.replies import text, text_map
from contreact_events.names import ACTIVE_RUNS, llm_host_down_key, llm_route_pins_key
from contreact_llm.scheduling.pool import choose_host, pinned_counts


@dataclass(frozen=True)
class Placed:
    """Where a run's call goes, and why no host could take it when none."""

    host: str | None
    down: dict[str, str] = field(default_factory=dict)
    """The hosts held down (or that failed this call), with their last error."""


class PoolState:
    def __init__(self, redis: aioredis.Redis, down_ms: int = 30_000) -> None:
        self._redis = redis
        self.down_ms = down_ms

    async def place(
        self, route_id: str, hosts: tuple[str, ...], run_id: str, failed: dict[str, str]
    ) -> Placed:
        """The host of ``run_id``'s next call on the route (``failed``: hosts this call
        could not reach, with why): its pin while it is up, else a new pin."""
        pins_key = llm_route_pins_key(route_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hget(pins_key, run_id)
            for host in hosts:
                pipe.get(llm_host_down_key(host))
            pin_raw, *downs = await pipe.execute()
        down = {host: text(why) for host, why in zip(hosts, downs, strict=True) if why is not None}
        down |= failed
        pin = None if pin_raw is None else text(pin_raw)
        if pin is not None and pin in hosts and pin not in down:
            return Placed(pin, down)
        async with self._redis.pipeline(transaction=True) as pipe:
            while True:  # one placement at a time per route, across every worker
                try:
                    await pipe.watch(pins_key)
                    chosen = await self._pin(pipe, pins_key, hosts, run_id, down)
                    break
                except WatchError:
                    continue
        return Placed(chosen, down)

    async def _pin(
        self,
        pipe: Pipeline,
        pins_key: str,
        hosts: tuple[str, ...],
        run_id: str,
        down: dict[str, str],
    ) -> str | None:
        """Choose the run's host and pin it, in a transaction on the watched pins."""
        pins = text_map(await pipe.hgetall(pins_key))
        runs = [run for run in pins if run != run_id]
        live: set[str] = set()
        if runs:
            flags = await self._redis.smismember(ACTIVE_RUNS, runs)
            live = {run for run, flag in zip(runs, flags, strict=True) if flag}
        chosen = choose_host(run_id, hosts, pin=None, down=down, pinned=pinned_counts(pins, live))
        ended = [run for run in runs if run not in live]
        pipe.multi()  # type: ignore[no-untyped-call]
        if chosen is not None:
            pipe.hset(pins_key, run_id, chosen)
        if ended:
            pipe.hdel(pins_key, *ended)
        await pipe.execute()
        return chosen

    async def mark_down(self, host: str, why: str) -> None:
        await self._redis.set(llm_host_down_key(host), why, px=self.down_ms)

    async def down_hosts(self, hosts: tuple[str, ...]) -> dict[str, str]:
        """The hosts of ``hosts`` held down now, with their last error."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.get(llm_host_down_key(host))
            downs = await pipe.execute()
        return {host: text(why) for host, why in zip(hosts, downs, strict=True) if why}
