"""The LLM worker's chat loop: take a waiting call from Redis only once it can start.

Chat tasks wait in their route's stream (backend, model, host pool). The loop looks
at every route and host in one round trip (``scan``), orders what could start
(``placement.plan``), takes a slot on a host (``host_slots``, shared by every
worker), and only then reads one entry of that route. The result, the ack, the
slot's release and a wake-up for the other workers go in one pipeline.

Wake-ups come through pub/sub (a task queued, a slot released); a poll every
``poll_s`` covers what pub/sub cannot say (a dead worker's lease that expired, a
lost message). While calls run, their leases are renewed and their stream entries'
claims refreshed, so neither a live worker's slot nor its task is taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.llm_routes import HOST_WAKE_PREFIX, ROUTE_WAKE_PREFIX, Route, known_routes
from contreact_bus.replies import text
from contreact_bus.task_stream import Consumer, ConsumerSettings, Delivery
from contreact_events.codec import message_from_fields
from contreact_events.config import EMBEDDED_HOST
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import (
    ACTIVE_RUNS,
    LLM_GROUP,
    LLM_WAKE_CHANNEL,
    llm_route_runs_key,
)
from contreact_events.tasks import LLMTask
from contreact_llm.handler import LLMTaskHandler
from contreact_llm.host_slots import HostLimits, HostSlots, HostView, Lease, LocalSlots
from contreact_llm.placement import Attempt, Policy, Waiting, plan

log = logging.getLogger(__name__)

BLOCKED_POLL_S = 0.1
"""How soon to look again while calls wait that could not start."""


@dataclass(frozen=True)
class SchedulerSettings:
    consumer_name: str
    concurrency: int = 32
    policy: Policy = "model_aware"
    max_wait_ms: int = 300_000
    poll_s: float = 1.0
    reclaim_idle_ms: int = 60_000
    max_deliveries: int = 5


@dataclass
class _Line:
    """One route as this worker sees it."""

    route: Route
    consumer: Consumer
    last_delivered: str = ""
    since_ms: int = 0
    """When this worker first saw the route waiting with no call started since."""


@dataclass
class _Running:
    line: _Line
    delivery: Delivery
    lease: Lease


@dataclass
class _Scan:
    now_ms: int
    waiting: list[Waiting] = field(default_factory=list)
    reclaimable: set[str] = field(default_factory=set)
    views: dict[str, HostView] = field(default_factory=dict)
    in_use: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per host: the models whose runs are still going (they will call again)."""
    ended: dict[str, list[str]] = field(default_factory=dict)
    """Per route: runs in its set that have ended (to drop from it)."""


class ChatScheduler:
    def __init__(
        self,
        redis: aioredis.Redis,
        handler: LLMTaskHandler,
        slots: HostSlots,
        limits: Callable[[str, str], HostLimits],
        settings: SchedulerSettings,
    ) -> None:
        self._redis = redis
        self._handler = handler
        self._slots = slots
        self._local = LocalSlots()
        self._limits = limits
        self.settings = settings
        self._lines: dict[str, _Line] = {}
        self._running: dict[bytes, _Running] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._refresh = True
        self.started = 0
        """Calls started by this worker (for tests and `status`)."""

    # --- the loop -----------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, burst: bool = False) -> int:
        """Start calls until ``stop`` (or, with ``burst``, until nothing waits or runs).
        Calls in progress are finished before returning. Returns calls started."""
        listening = asyncio.create_task(self._listen(stop))
        keeping = asyncio.create_task(self._keep(stop))
        try:
            while not stop.is_set():
                self._wake.clear()
                started, waiting = await self._dispatch()
                if burst and not waiting and not self._running:
                    break
                if started:
                    continue
                # Calls wait that could not start: what they wait for (a run that
                # ends, freeing its model) rings no bell, so look again soon.
                every_s = min(self.settings.poll_s, BLOCKED_POLL_S) if waiting else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), every_s or self.settings.poll_s)
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
        finally:
            for task in (listening, keeping):
                task.cancel()
            await asyncio.gather(listening, keeping, return_exceptions=True)
        return self.started

    async def _dispatch(self) -> tuple[int, bool]:
        """Start what can start now. Returns (calls started, whether any route waits)."""
        if self._refresh:
            await self._load_routes()
        if self._free() <= 0:
            return 0, True
        scan = await self._scan()
        limits = self._host_limits()
        if scan.ended:
            await self._forget_ended(scan.ended)
        attempts = plan(
            scan.waiting,
            scan.views,
            limits,
            now_ms=scan.now_ms,
            keep_warm_ms=self._slots.times.keep_warm_ms,
            max_wait_ms=self.settings.max_wait_ms,
            in_use=scan.in_use,
            policy=self.settings.policy,
        )
        remaining = {w.route_id: w.count for w in scan.waiting}
        started = 0
        for attempt in attempts:
            line = self._lines[attempt.route_id]
            while self._free() > 0 and remaining[attempt.route_id] > 0:
                lease = await self._acquire(line, attempt, limits[attempt.host])
                if lease is None:
                    break
                taken = await self._take(line, attempt.route_id in scan.reclaimable)
                if not taken:
                    await self._release(lease)
                    remaining[attempt.route_id] = 0
                    break
                remaining[attempt.route_id] -= 1
                started += await self._start(line, taken, lease, limits[attempt.host])
        return started, bool(scan.waiting)

    def _free(self) -> int:
        return self.settings.concurrency - len(self._running)

    # --- what waits where -----------------------------------------------------------

    async def _load_routes(self) -> None:
        self._refresh = False
        for route_id, route in (await known_routes(self._redis)).items():
            if route_id in self._lines:
                continue
            consumer = Consumer(
                self._redis,
                route.stream,
                LLM_GROUP,
                self.settings.consumer_name,
                ConsumerSettings(batch_size=1, reclaim_idle_ms=self.settings.reclaim_idle_ms),
            )
            await consumer.ensure_group()
            self._lines[route_id] = _Line(route, consumer)

    def _hosts(self) -> list[str]:
        hosts = {host for line in self._lines.values() for host in line.route.hosts}
        return sorted(hosts - {EMBEDDED_HOST})

    def _host_limits(self) -> dict[str, HostLimits]:
        out: dict[str, HostLimits] = {}
        for line in self._lines.values():
            for host in line.route.hosts:
                out.setdefault(host, self._limits(host, line.route.backend))
        return out

    async def _scan(self) -> _Scan:
        """Every route's group and runs, every host's leases, in one round trip."""
        lines = list(self._lines.values())
        hosts = self._hosts()
        idle_ms = self.settings.reclaim_idle_ms
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.time()
            pipe.smembers(ACTIVE_RUNS)
            for line in lines:
                pipe.xinfo_groups(line.route.stream)
                pipe.xpending_range(line.route.stream, LLM_GROUP, "-", "+", 1, idle=idle_ms)
                pipe.smembers(llm_route_runs_key(line.route.id))
            for host in hosts:
                HostSlots.queue_view(pipe, host)
            replies = await pipe.execute(raise_on_error=False)
        seconds, micros = replies[0]
        scan = _Scan(now_ms=int(seconds) * 1000 + int(micros) // 1000)
        active = set(replies[1]) if isinstance(replies[1], set) else set()
        in_use: dict[str, set[str]] = {}
        for index, line in enumerate(lines):
            groups, stale, runs = replies[2 + 3 * index : 5 + 3 * index]
            members = runs if isinstance(runs, set) else set()
            if members & active:
                for host in line.route.hosts:
                    in_use.setdefault(host, set()).add(line.route.model)
            if members - active:
                scan.ended[line.route.id] = [text(run) for run in members - active]
            count, delivered = _waiting(groups)
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
                )
            )
        scan.in_use = {host: frozenset(models) for host, models in in_use.items()}
        offset = 2 + 3 * len(lines)
        for number, host in enumerate(hosts):
            start = offset + 4 * number
            scan.views[host] = HostSlots.view(host, replies[start : start + 4])
        if any(EMBEDDED_HOST in line.route.hosts for line in lines):
            scan.views[EMBEDDED_HOST] = self._local.view(EMBEDDED_HOST)
        return scan

    async def _forget_ended(self, ended: dict[str, list[str]]) -> None:
        """Drop ended runs from their routes' sets (a run never becomes active again)."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for route_id, runs in ended.items():
                pipe.srem(llm_route_runs_key(route_id), *runs)
            await pipe.execute()

    # --- taking a slot, then a task ----------------------------------------------

    async def _acquire(self, line: _Line, attempt: Attempt, limits: HostLimits) -> Lease | None:
        model = line.route.model
        if attempt.host == EMBEDDED_HOST:
            local = await self._local.acquire(attempt.host, model, limits)
            return local if isinstance(local, Lease) else None
        got = await self._slots.acquire(
            attempt.host,
            model,
            HostLimits(limits.parallel, attempt.max_loaded),
            protect=attempt.protect,
            may_drain=attempt.may_drain,
        )
        if isinstance(got, Lease):
            if got.how != "loaded":
                log.info("%s: %s on %s (%s)", line.route.id, got.how, attempt.host, model)
            return got
        if got.startswith("drain:"):
            log.info(
                "%s waited %.0fs: %s drains %s to make room",
                line.route.id,
                self.settings.max_wait_ms / 1000,
                attempt.host,
                got.removeprefix("drain:"),
            )
        return None

    async def _release(self, lease: Lease) -> None:
        if lease.host == EMBEDDED_HOST:
            self._local.release(lease)
            return
        await self._slots.release(lease)

    async def _take(self, line: _Line, reclaimable: bool) -> list[Delivery]:
        """At most the entries one read gives: new ones, or one a silent worker left."""
        consumer = line.consumer
        deliveries = await consumer.read(block=False)
        if not deliveries and reclaimable:
            deliveries = await consumer.reclaim()
        return deliveries

    async def _start(
        self, line: _Line, deliveries: Sequence[Delivery], lease: Lease, limits: HostLimits
    ) -> int:
        """Start the first delivery on ``lease``; a second one (a restart's own entry
        beside a new one) gets its own slot, or stays pending to be reclaimed."""
        started = 0
        for delivery in deliveries:
            if started:
                attempt = Attempt(line.route.id, lease.host, "warm", (), limits.max_loaded)
                extra = await self._acquire(line, attempt, limits)
                if extra is None:
                    log.warning(
                        "%s: no slot for %s now; it stays pending until reclaimed",
                        line.route.id,
                        delivery.entry_id.decode(),
                    )
                    continue
                lease = extra
            self._running[delivery.entry_id] = _Running(line, delivery, lease)
            task = asyncio.create_task(self._call(self._running[delivery.entry_id]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            started += 1
            self.started += 1
        return started

    async def _call(self, running: _Running) -> None:
        line, delivery, lease = running.line, running.delivery, running.lease
        try:
            if delivery.deliveries > self.settings.max_deliveries:
                reason = f"delivered {delivery.deliveries} times without success"
                await line.consumer.dead_letter(delivery, reason)
                await self._release(lease)
                return
            try:
                task = message_from_fields(LLMTask, delivery.fields)
            except ContReActEventError as exc:
                await line.consumer.dead_letter(delivery, f"cannot decode: {exc}")
                await self._release(lease)
                return
            message = await self._handler.reply(task.model_copy(update={"host": lease.host}))
            async with self._redis.pipeline(transaction=False) as pipe:
                self._handler.inbox.queue(pipe, message)
                pipe.xack(line.route.stream, LLM_GROUP, delivery.entry_id)
                if lease.host != EMBEDDED_HOST:
                    self._slots.queue_release(pipe, lease)
                pipe.publish(LLM_WAKE_CHANNEL, HOST_WAKE_PREFIX + lease.host)
                await pipe.execute()
            if lease.host == EMBEDDED_HOST:
                self._local.release(lease)
        except Exception:
            log.exception(
                "%s: %s failed; it stays pending", line.route.id, delivery.entry_id.decode()
            )
        finally:
            self._running.pop(delivery.entry_id, None)
            self._wake.set()

    # --- beside the loop ---------------------------------------------------------

    async def _listen(self, stop: asyncio.Event) -> None:
        """Wake the loop when a task is queued or a slot released anywhere."""
        while not stop.is_set():
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(LLM_WAKE_CHANNEL)
                self._wake.set()  # anything sent before we listened
                while not stop.is_set():
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=self.settings.poll_s
                    )
                    if message is None:
                        continue
                    data = text(message["data"])
                    if data.startswith(ROUTE_WAKE_PREFIX):
                        self._refresh |= data.removeprefix(ROUTE_WAKE_PREFIX) not in self._lines
                    self._wake.set()
            except (ConnectionError, OSError, aioredis.ConnectionError) as exc:
                log.warning("wake-up channel lost (%s); listening again", exc)
                await asyncio.sleep(self.settings.poll_s)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _keep(self, stop: asyncio.Event) -> None:
        """Renew the leases and refresh the claims of the calls in progress."""
        every_s = min(self._slots.times.lease_ttl_ms, self.settings.reclaim_idle_ms) / 3000
        while True:
            await asyncio.sleep(every_s)
            running = list(self._running.values())
            if not running:
                continue
            try:
                remote = [r.lease for r in running if r.lease.host != EMBEDDED_HOST]
                for lost in await self._slots.renew(remote):
                    log.warning("lease of %s on %s had expired", lost.model, lost.host)
                await self._refresh_claims(running)
            except Exception as exc:  # the next round tries again
                log.warning("could not renew leases or claims: %s", exc)

    async def _refresh_claims(self, running: Sequence[_Running]) -> None:
        by_stream: dict[str, list[Any]] = {}
        for item in running:
            by_stream.setdefault(item.line.route.stream, []).append(item.delivery.entry_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            for stream, ids in by_stream.items():
                pipe.xclaim(stream, LLM_GROUP, self.settings.consumer_name, 0, ids, justid=True)
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
