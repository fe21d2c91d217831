"""What waits where: the LLM worker's view of every route and of the hosts that hold
a limited number of models, read in one round trip.

A route (backend, model, host pool) is a stream of chat tasks read by the workers'
group. Per route: how many tasks were never delivered (``XINFO GROUPS`` lag), since
when none of them started (this worker's own observation: reset whenever a task of
the route is delivered), and, once a second, whether a silent worker left one behind
(``XPENDING`` past the idle time). Per host with a model limit: its leases, loaded
and draining models, and which models' runs are still going (the routes' run sets
against ``runs:active``).

The loop takes as many slots as calls wait on a route (one script call), and only then
reads that many entries: first those a silent worker left (``XAUTOCLAIM``, when the scan
saw some: they are the oldest, and a route that keeps receiving new tasks would
otherwise never get to them), then new ones (``XREADGROUP COUNT n``); slots left unused
go back at once. A task read but waiting for a slot would be work in flight that nobody
works on. While calls wait that cannot start, the worker looks again every 0.1 s, since
a run's end rings no bell. A worker ignores its own wake-ups, and a call's end wakes
its own loop only when calls were left waiting. Every 30 s the worker keeps house on
every route's stream as on ``tasks:llm`` (``Consumer.housekeep``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.llm_routes import Route, known_routes
from contreact_bus.replies import text
from contreact_bus.streams.consumer import Consumer, ConsumerSettings, DeadLetterHook
from contreact_events.config import EMBEDDED_HOST
from contreact_events.names import ACTIVE_RUNS, LLM_GROUP, llm_route_runs_key
from contreact_llm.scheduling.host_slots import HostLimits, HostSlots, HostView, LocalSlots
from contreact_llm.scheduling.placement import Waiting

log = logging.getLogger(__name__)


@dataclass
class Line:
    """One route as this worker sees it."""

    route: Route
    consumer: Consumer
    last_delivered: str = ""
    since_ms: int = 0
    """When this worker first saw the route waiting with no call started since."""


@dataclass
class Scan:
    now_ms: int
    waiting: list[Waiting] = field(default_factory=list)
    reclaimable: set[str] = field(default_factory=set)
    views: dict[str, HostView] = field(default_factory=dict)
    in_use: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per host: the models whose runs are still going (they will call again)."""
    ended: dict[str, list[str]] = field(default_factory=dict)
    """Per route: runs in its set that have ended (to drop from it)."""


class RouteScanner:
    def __init__(
        self,
        redis: aioredis.Redis,
        consumer_name: str,
        limits: Callable[[str, str], HostLimits],
        local: LocalSlots,
        *,
        reclaim_idle_ms: int,
        on_dead_letter: DeadLetterHook | None = None,
    ) -> None:
        self._redis = redis
        self._on_dead_letter = on_dead_letter
        self._consumer_name = consumer_name
        self._limits = limits
        self._local = local
        self._reclaim_idle_ms = reclaim_idle_ms
        self.lines: dict[str, Line] = {}

    async def load_routes(self) -> None:
        """Take in the routes registered since the last call (a consumer group each)."""
        for route_id, route in (await known_routes(self._redis)).items():
            if route_id in self.lines:
                continue
            consumer = Consumer(
                self._redis,
                route.stream,
                LLM_GROUP,
                self._consumer_name,
                ConsumerSettings(batch_size=1, reclaim_idle_ms=self._reclaim_idle_ms),
                on_dead_letter=self._on_dead_letter,
            )
            await consumer.ensure_group()
            # (setdefault: housekeeping loads routes too, beside the dispatch loop)
            self.lines.setdefault(route_id, Line(route, consumer))

    async def housekeep(self) -> tuple[int, int]:
        """Trim what every worker is done with from each route's stream and forget
        consumers long gone (``Consumer.housekeep``): without it a route's stream kept
        every acked task, each with its run's whole history. Returns (trimmed, removed)."""
        trimmed = removed = 0
        await self.load_routes()
        for line in list(self.lines.values()):
            try:
                done = await line.consumer.housekeep()
            except Exception as exc:  # the next round tries again
                log.warning("%s: housekeeping failed: %s", line.route.stream, exc)
                continue
            trimmed, removed = trimmed + done[0], removed + done[1]
        await self.forget_ended(await self.ended_runs())
        return trimmed, removed

    def hosts(self) -> list[str]:
        hosts = {host for line in self.lines.values() for host in line.route.hosts}
        return sorted(hosts - {EMBEDDED_HOST})

    def host_limits(self) -> dict[str, HostLimits]:
        out: dict[str, HostLimits] = {}
        for line in self.lines.values():
            for host in line.route.hosts:
                out.setdefault(host, self._limits(host, line.route.backend))
        return out

    async def scan(self, *, full: bool = True) -> Scan:
        """Every route's group, every host's leases, in one round trip; where a host
        holds a limited number of models, also which runs still use each route.
        ``full``: also the entries a silent worker left (XPENDING past the idle time)."""
        lines = list(self.lines.values())
        limits = self.host_limits()
        # Only hosts with a model limit are looked at: elsewhere the slot script alone
        # decides, and placement has nothing to weigh.
        hosts = [host for host in self.hosts() if limits[host].max_loaded > 0]
        residency = bool(hosts)
        idle_ms = self._reclaim_idle_ms
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.time()
            for line in lines:
                pipe.xinfo_groups(line.route.stream)
                if full:
                    pipe.xpending_range(line.route.stream, LLM_GROUP, "-", "+", 1, idle=idle_ms)
                if residency:
                    pipe.smembers(llm_route_runs_key(line.route.id))
            for host in hosts:
                HostSlots.queue_view(pipe, host)
            if residency:
                pipe.smembers(ACTIVE_RUNS)
            replies = iter(await pipe.execute(raise_on_error=False))
        seconds, micros = next(replies)
        scan = Scan(now_ms=int(seconds) * 1000 + int(micros) // 1000)
        route_runs: dict[str, set[bytes]] = {}
        for line in lines:
            count, delivered = _waiting(next(replies))
            stale = next(replies) if full else None
            if residency:
                runs = next(replies)
                route_runs[line.route.id] = runs if isinstance(runs, set) else set()
            reclaimable = isinstance(stale, list) and bool(stale)
            if reclaimable:
                scan.reclaimable.add(line.route.id)
            if count == 0 and not reclaimable:
                line.since_ms, line.last_delivered = 0, delivered
                continue
            if not line.since_ms or delivered != line.last_delivered:
                line.since_ms, line.last_delivered = scan.now_ms, delivered
            scan.waiting.append(
                Waiting(
                    route_id=line.route.id,
                    model=line.route.model,
                    hosts=line.route.hosts,
                    count=max(count, 1),
                    since_ms=line.since_ms,
                    background=line.route.background,
                )
            )
        for host in hosts:
            view = [next(replies) for _ in range(HostSlots.VIEW_REPLIES)]
            scan.views[host] = HostSlots.view(host, scan.now_ms, view)
        if residency:
            active = next(replies)
            self._runs_in_use(scan, route_runs, active if isinstance(active, set) else set())
        if any(EMBEDDED_HOST in line.route.hosts for line in lines):
            scan.views[EMBEDDED_HOST] = self._local.view(EMBEDDED_HOST)
        return scan

    def _runs_in_use(
        self, scan: Scan, route_runs: dict[str, set[bytes]], active: set[bytes]
    ) -> None:
        """Per host, the models whose runs are still going; and the ended runs to drop."""
        in_use: dict[str, set[str]] = {}
        for route_id, members in route_runs.items():
            route = self.lines[route_id].route
            if members & active:
                for host in route.hosts:
                    in_use.setdefault(host, set()).add(route.model)
            if members - active:
                scan.ended[route_id] = [text(run) for run in members - active]
        scan.in_use = {host: frozenset(models) for host, models in in_use.items()}

    async def ended_runs(self) -> dict[str, list[str]]:
        """Per route: the runs in its set that have ended. The scan finds them only where
        a host limits its loaded models; the housekeeping asks here for every route, so
        a hosted API's or a scripted model's sets do not keep every run that ever called
        (issue 32: 32 bytes a finished run, for ever). One key per command."""
        lines = list(self.lines.values())
        async with self._redis.pipeline(transaction=False) as pipe:
            for line in lines:
                pipe.smembers(llm_route_runs_key(line.route.id))
            members = [sorted(runs) for runs in await pipe.execute()]
        async with self._redis.pipeline(transaction=False) as pipe:
            for runs in members:
                if runs:
                    pipe.smismember(ACTIVE_RUNS, runs)
            answers = iter(await pipe.execute())
        ended: dict[str, list[str]] = {}
        for line, runs in zip(lines, members, strict=True):
            if runs and (
                gone := [text(r) for r, on in zip(runs, next(answers), strict=True) if not on]
            ):
                ended[line.route.id] = gone
        return ended

    async def forget_ended(self, ended: dict[str, list[str]]) -> None:
        """Drop ended runs from their routes' sets (a run never becomes active again)."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for route_id, runs in ended.items():
                pipe.srem(llm_route_runs_key(route_id), *runs)
            await pipe.execute()


def _waiting(groups: Any) -> tuple[int, str]:
    """(entries not yet delivered, last delivered id) from XINFO GROUPS."""
    if not isinstance(groups, list):  # the stream is gone (or the reply an error)
        return 0, ""
    for group in groups:
        if text(group.get("name", b"")) != LLM_GROUP:
            continue
        lag = group.get("lag")
        delivered = text(group.get("last-delivered-id", b""))
        # lag is unknown after entries were deleted: look, the read will tell
        return (1 if lag is None else int(lag)), delivered
    return 1, ""
