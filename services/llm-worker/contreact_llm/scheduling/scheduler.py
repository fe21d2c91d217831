"""The LLM worker's chat loop: take a waiting call from Redis only once it can start.

Chat tasks wait in their route's stream (backend, model, host pool). The loop looks
at every route and host in one round trip (``route_scan``), orders what could start
(``placement.plan``), takes slots on a host (``host_slots``, shared by every worker),
and only then reads as many entries of that route as it holds slots. The result,
the ack, the slot's release and a wake-up for the other workers go in one pipeline.

Wake-ups come through pub/sub (a task queued, a slot released); a poll every
``poll_s`` covers what pub/sub cannot say (a dead worker's lease that expired, a
lost message). A bell names the route of the task queued: when the last look left no
call waiting and the rung routes' hosts hold any number of models (nothing for
placement to weigh: the slot script alone decides), the loop goes from the bell
straight to the slots and the entries, without the scan (``_dispatch_rung``: issue 20,
one round trip and the scan's work fewer on every call's way). While calls run,
their leases are renewed and their stream entries' claims refreshed, so neither a
live worker's slot nor its task is taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.llm_routes import FREED_WAKE_PREFIX, ROUTE_WAKE_PREFIX
from contreact_bus.replies import stream_entries, text
from contreact_bus.streams.consumer import Delivery
from contreact_bus.streams.inbox import tell_run_of_dead_letter
from contreact_events.config import EMBEDDED_HOST
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import LLM_GROUP, LLM_WAKE_CHANNEL
from contreact_events.wire.task_history import TaskDecoder
from contreact_llm.handler import LLMTaskHandler
from contreact_llm.scheduling.host_slots import HostLimits, HostSlots, Lease, LocalSlots
from contreact_llm.scheduling.placement import Attempt, Policy, plan
from contreact_llm.scheduling.route_scan import Line, RouteScanner

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
    housekeeping_every_s: float = 30.0
    """How often the routes' streams are trimmed (as ``ConsumerSettings``)."""


@dataclass
class _Running:
    line: Line
    delivery: Delivery
    lease: Lease
    ending: bool = False
    """Its result and release are on their way (a renewal may find the lease gone)."""


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
        self.settings = settings
        self._routes = RouteScanner(
            redis,
            settings.consumer_name,
            limits,
            self._local,
            reclaim_idle_ms=settings.reclaim_idle_ms,
            on_dead_letter=tell_run_of_dead_letter(handler.inbox),
        )
        self.decoder = TaskDecoder()
        """Chat tasks, each run's known history validated once (``wire.task_history``)."""
        self._running: dict[bytes, _Running] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._rung: Counter[str] = Counter()
        """Bells heard per route since the last look (each queued task rings once)."""
        self._refresh = True
        self._blocked = False
        """Whether calls were left waiting by the last look (a call's end may free them)."""
        self._freed = f"{FREED_WAKE_PREFIX}{settings.consumer_name}"
        """What this worker rings when it frees a slot (so it can ignore its own)."""
        self.started = 0
        """Calls started by this worker (for tests and `status`)."""

    # --- the loop -----------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, burst: bool = False) -> int:
        """Start calls until ``stop`` (or, with ``burst``, until nothing waits or runs).
        Calls in progress are finished before returning. Returns calls started."""
        # What ends the helpers besides ``stop``: a burst ends the loop with ``stop``
        # unset, and a cancellation can be lost inside redis-py's pub/sub read (seen: a
        # burst that never returned, its listener pinging for 20 minutes).
        ended = asyncio.Event()
        listening = asyncio.create_task(self._listen(stop, ended))
        keeping = asyncio.create_task(self._keep(ended))
        stopping = asyncio.create_task(stop.wait())  # a stop ends the wait for a bell
        stopping.add_done_callback(lambda _done: self._wake.set())
        next_full = 0.0
        try:
            while not stop.is_set():
                self._wake.clear()
                full = time.monotonic() >= next_full
                if full:  # what no bell rings for: a silent worker's tasks
                    next_full = time.monotonic() + self.settings.poll_s
                rung, self._rung = self._rung, Counter()
                try:
                    fast = None
                    if rung and not (full or burst or self._blocked or self._refresh):
                        fast = await self._dispatch_rung(rung)
                    started, left, waiting = fast or await self._dispatch(full=full)
                except (aioredis.ConnectionError, aioredis.TimeoutError, OSError) as exc:
                    log.warning("Redis did not answer (%s); looking again shortly", exc)
                    await asyncio.sleep(self.settings.poll_s)
                    continue
                self._blocked = left > 0
                if burst and not waiting and not self._running:
                    break
                if started and left:
                    continue  # more may start at once
                # Calls wait that could not start: what they wait for (a run that
                # ends, freeing its model) rings no bell, so look again soon.
                every_s = min(self.settings.poll_s, BLOCKED_POLL_S) if left else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), every_s or self.settings.poll_s)
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
        finally:
            ended.set()
            for task in (listening, keeping, stopping):
                task.cancel()
            await asyncio.gather(listening, keeping, stopping, return_exceptions=True)
        return self.started

    async def _dispatch(self, *, full: bool = True) -> tuple[int, int, bool]:
        """Start what can start now. Returns (calls started, calls seen waiting and
        not started, whether any route waits). ``full`` also looks for entries a
        silent worker left behind."""
        if self._refresh:
            self._refresh = False
            await self._routes.load_routes()
        if self._free() <= 0:
            return 0, 1, True
        scan = await self._routes.scan(full=full)
        limits = self._routes.host_limits()
        if scan.ended:
            await self._routes.forget_ended(scan.ended)
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
            line = self._routes.lines[attempt.route_id]
            wanted = min(remaining[attempt.route_id], self._free())
            if wanted <= 0:
                continue
            leases = await self._acquire(line, attempt, limits[attempt.host], wanted)
            if not leases:
                continue
            taken = await self._take(line, len(leases), attempt.route_id in scan.reclaimable)
            for delivery, lease in zip(taken, leases, strict=False):
                self._start(line, delivery, lease)
            started += len(taken)
            remaining[attempt.route_id] -= len(taken)
            if len(taken) < len(leases):  # fewer than counted: another worker took them
                remaining[attempt.route_id] = 0
                await self._release(*leases[len(taken) :])
        return started, sum(remaining.values()), bool(scan.waiting)

    async def _dispatch_rung(self, rung: Counter[str]) -> tuple[int, int, bool] | None:
        """Start the calls the bells announced, without a scan: as many per route as
        it rang, on its hosts in order (as ``plan`` orders a pool it has no view of),
        runs' lines before background ones. None (the full look instead) when a rung
        route is unknown yet, or one of its hosts limits the models it holds (then
        placement weighs the hosts' views, which only the scan reads)."""
        limits = self._routes.host_limits()
        lines = []
        for route_id in rung:
            line = self._routes.lines.get(route_id)
            if line is None or any(limits[host].max_loaded > 0 for host in line.route.hosts):
                return None
            lines.append(line)
        started = left = 0
        for line in sorted(lines, key=lambda line: line.route.background):
            wanted = min(rung[line.route.id], self._free())
            left += rung[line.route.id] - wanted
            for host in line.route.hosts:
                if wanted <= 0:
                    break
                attempt = Attempt(line.route.id, host, "warm", (), 0)
                leases = await self._acquire(line, attempt, limits[host], wanted)
                if not leases:
                    continue
                taken = await self._take(line, len(leases), reclaimable=False)
                for delivery, lease in zip(taken, leases, strict=False):
                    self._start(line, delivery, lease)
                started += len(taken)
                wanted -= len(taken)
                if len(taken) < len(leases):  # another worker took them (bells ring for all)
                    wanted = 0
                    await self._release(*leases[len(taken) :])
            left += wanted
        return started, left, True

    def _free(self) -> int:
        return self.settings.concurrency - len(self._running)

    # --- taking a slot, then a task ----------------------------------------------

    async def _acquire(
        self, line: Line, attempt: Attempt, limits: HostLimits, count: int
    ) -> list[Lease]:
        model = line.route.model
        if attempt.host == EMBEDDED_HOST:
            local = await self._local.acquire(attempt.host, model, limits, count=count)
            return local if isinstance(local, list) else []
        got = await self._slots.acquire(
            attempt.host,
            model,
            HostLimits(limits.parallel, attempt.max_loaded),
            count=count,
            protect=attempt.protect,
            may_drain=attempt.may_drain,
        )
        if isinstance(got, list):
            if got[0].how != "loaded":
                log.info("%s: %s on %s (%s)", line.route.id, got[0].how, attempt.host, model)
            return got
        if got.startswith("drain:"):
            log.info(
                "%s waited %.0fs: %s drains %s to make room",
                line.route.id,
                self.settings.max_wait_ms / 1000,
                attempt.host,
                got.removeprefix("drain:"),
            )
        return []

    async def _release(self, *leases: Lease) -> None:
        remote = [lease for lease in leases if lease.host != EMBEDDED_HOST]
        for lease in leases:
            if lease.host == EMBEDDED_HOST:
                self._local.release(lease)
        if remote:
            await self._slots.release(*remote)

    async def _take(self, line: Line, count: int, reclaimable: bool) -> list[Delivery]:
        """At most ``count`` entries of the route: first, when the scan saw some, those
        a silent worker left behind (the oldest: on a route that keeps receiving new
        tasks they would otherwise wait for as long as its slots stay busy), then new
        ones (one read)."""
        taken: list[Delivery] = []
        while reclaimable and len(taken) < count:
            left = await line.consumer.reclaim()  # (one entry a call: batch_size 1)
            if not left:
                break
            taken += left
        if len(taken) >= count:
            return taken
        reply = await self._redis.xreadgroup(
            LLM_GROUP,
            self.settings.consumer_name,
            {line.route.stream: ">"},
            count=count - len(taken),
        )
        for entry_id, fields in stream_entries(reply):
            if fields is None:  # trimmed while pending: nothing to run
                await self._redis.xack(line.route.stream, LLM_GROUP, entry_id)
                continue
            taken.append(Delivery(entry_id, fields))
        return taken

    def _start(self, line: Line, delivery: Delivery, lease: Lease) -> None:
        running = _Running(line, delivery, lease)
        self._running[delivery.entry_id] = running
        task = asyncio.create_task(self._call(running))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.started += 1

    async def _call(self, running: _Running) -> None:
        line, delivery, lease = running.line, running.delivery, running.lease
        try:
            if delivery.deliveries > self.settings.max_deliveries:
                reason = f"delivered {delivery.deliveries} times without success"
                await line.consumer.dead_letter(delivery, reason)
                await self._release(lease)
                return
            try:
                task = self.decoder.decode(delivery.fields)  # a run's history once
            except ContReActEventError as exc:
                await line.consumer.dead_letter(delivery, f"cannot decode: {exc}")
                await self._release(lease)
                return
            # the task as its run's log has it (its bytes as they came, hashed as they are)
            refusal = await self._handler.refusal(task, delivery.fields.get(b"msg"))
            if refusal is not None:  # a cancelled run, a stale copy: no call for nothing
                log.info("%s: LLM task dropped: %s", line.route.id, refusal)
                await line.consumer.ack(delivery.entry_id)
                await self._release(lease)
                return
            started = await self._handler.take(task.model_copy(update={"host": lease.host}))
            message = await self._handler.reply(started)
            async with self._redis.pipeline(transaction=False) as pipe:
                self._handler.queue_answer(pipe, task, message)
                pipe.xack(line.route.stream, LLM_GROUP, delivery.entry_id)
                if lease.host != EMBEDDED_HOST:
                    self._slots.queue_release(pipe, lease)
                pipe.publish(LLM_WAKE_CHANNEL, self._freed)
                running.ending = True
                await pipe.execute()
            if lease.host == EMBEDDED_HOST:
                self._local.release(lease)
        except Exception:
            log.exception(
                "%s: %s failed; it stays pending", line.route.id, delivery.entry_id.decode()
            )
        finally:
            self._running.pop(delivery.entry_id, None)
            if self._blocked:  # calls wait for what this one just freed
                self._wake.set()

    # --- beside the loop ---------------------------------------------------------

    async def _listen(self, stop: asyncio.Event, ended: asyncio.Event) -> None:
        """Wake the loop when a task is queued or a slot released anywhere, until
        ``stop`` or ``ended`` (looked at every ``poll_s`` at least)."""
        while not (stop.is_set() or ended.is_set()):
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(LLM_WAKE_CHANNEL)
                self._refresh = True  # a route registered before we listened rang no bell
                self._wake.set()  # anything sent before we listened
                while not (stop.is_set() or ended.is_set()):
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=self.settings.poll_s
                    )
                    if message is None:
                        continue
                    data = text(message["data"])
                    if data == self._freed:
                        continue  # our own release: the loop knows already
                    if data.startswith(ROUTE_WAKE_PREFIX):
                        route_id = data.removeprefix(ROUTE_WAKE_PREFIX)
                        self._refresh |= route_id not in self._routes.lines
                        self._rung[route_id] += 1
                    self._wake.set()
            except (OSError, aioredis.ConnectionError, aioredis.TimeoutError) as exc:
                log.warning("wake-up channel lost (%s); listening again", exc)
                await asyncio.sleep(self.settings.poll_s)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _keep(self, ended: asyncio.Event) -> None:
        """Renew the leases and refresh the claims of the calls in progress; now and
        then, keep house on every route's stream. Until ``ended``."""
        every_s = min(self._slots.times.lease_ttl_ms, self.settings.reclaim_idle_ms) / 3000
        next_housekeeping = time.monotonic() + self.settings.housekeeping_every_s
        while not ended.is_set():
            await asyncio.sleep(every_s)
            if time.monotonic() >= next_housekeeping:
                next_housekeeping = time.monotonic() + self.settings.housekeeping_every_s
                try:  # never at the cost of the renewals below
                    await self.housekeep()
                except Exception as exc:
                    log.warning("housekeeping of the routes' streams failed: %s", exc)
            running = list(self._running.values())
            if not running:
                continue
            try:
                remote = [r.lease for r in running if r.lease.host != EMBEDDED_HOST]
                lost = {lease.lease_id for lease in await self._slots.renew(remote)}
                for item in running:
                    if item.lease.lease_id in lost and not item.ending:  # not just released
                        lease = item.lease
                        log.warning("lease of %s on %s had expired", lease.model, lease.host)
                await self._refresh_claims([r for r in running if not r.ending])
            except Exception as exc:  # the next round tries again
                log.warning("could not renew leases or claims: %s", exc)

    async def housekeep(self) -> tuple[int, int]:
        """Trim what every worker is done with from each route's stream and forget
        consumers long gone (``Consumer.housekeep``): without it a route's stream kept
        every acked task, each with its run's whole history. Returns (trimmed, removed)."""
        trimmed = removed = 0
        await self._routes.load_routes()
        for line in list(self._routes.lines.values()):
            try:
                done = await line.consumer.housekeep()
            except Exception as exc:  # the next round tries again
                log.warning("%s: housekeeping failed: %s", line.route.stream, exc)
                continue
            trimmed, removed = trimmed + done[0], removed + done[1]
        await self._routes.forget_ended(await self._routes.ended_runs())
        return trimmed, removed

    async def _refresh_claims(self, running: Sequence[_Running]) -> None:
        by_stream: dict[str, list[Any]] = {}
        for item in running:
            by_stream.setdefault(item.line.route.stream, []).append(item.delivery.entry_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            for stream, ids in by_stream.items():
                pipe.xclaim(stream, LLM_GROUP, self.settings.consumer_name, 0, ids, justid=True)
            await pipe.execute()
