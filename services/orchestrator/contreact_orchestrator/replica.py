"""One orchestrator replica: it holds leases on inbox shards and serves their inboxes.

Every ``renew_every_s`` it renews its leases (a lost one stops that shard at once),
registers itself, and balances: the shards whose preferred owner (rendezvous hashing
over the live replicas) is another live replica are handed over; free shards it
prefers, or that nobody took for a while, are taken. A new owner takes every entry
still pending in the shard's inbox, then recovers the shard's runs. Beside that, a
housekeeping timer reports overdue waits of the held runs and writes again the
archives of finished runs that could not be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import redis.asyncio as aioredis

from contreact_bus.backoff import REDIS_DOWN, Backoff
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import tell_run_of_dead_letter
from contreact_bus.streams.serving import serve
from contreact_events.names import INBOX_GROUP, inbox_stream
from contreact_events.wire.tasks import InboxMessage
from contreact_orchestrator.exceptions import LeaseLost
from contreact_orchestrator.leases import Lease, ShardLeases, preferred_owner
from contreact_orchestrator.orchestrator import Orchestrator

log = logging.getLogger(__name__)


INBOX_CONSUMER = ConsumerSettings(
    block_ms=1000, batch_size=64, reclaim_idle_ms=5_000, reclaim_every_s=1.0
)


@dataclass(frozen=True)
class ReplicaSettings:
    lease_ttl_s: float = 10.0
    renew_every_s: float = 2.0
    orphan_after_s: float = 4.0
    """A free shard its preferred replica has not taken for this long is taken by any."""
    deadline_check_s: float = 1.0
    consumer: ConsumerSettings = INBOX_CONSUMER


@dataclass
class _Serving:
    lease: Lease
    stop: asyncio.Event
    task: asyncio.Task[None]


class Replica:
    def __init__(
        self,
        redis: aioredis.Redis,
        orchestrator: Orchestrator,
        name: str,
        settings: ReplicaSettings = ReplicaSettings(),
    ) -> None:
        self._redis = redis
        self._orchestrator = orchestrator
        self.name = name
        self.settings = settings
        self._leases = ShardLeases(redis, name, settings.lease_ttl_s)
        self._serving: dict[int, _Serving] = {}
        self._free_since: dict[int, float] = {}

    @property
    def held(self) -> list[int]:
        return sorted(self._serving)

    async def run(self, stop: asyncio.Event, *, burst: bool = False) -> None:
        """Hold and serve shards until ``stop`` (then hand them back at once). With
        ``burst``: take every free shard, serve what waits, and return."""
        if burst:
            await self._burst()
            return
        backoff = Backoff(f"orchestrator replica {self.name}")
        timer = asyncio.create_task(self._housekeeping(stop))
        try:
            while not stop.is_set():
                try:
                    await self.balance()
                    backoff.reset()
                except REDIS_DOWN as exc:
                    await backoff.wait(exc)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.renew_every_s)
        finally:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
            await self.stop_all(release=True)

    async def balance(self) -> None:
        """One round: renew, register, hand over, take."""
        held = [s.lease for s in self._serving.values()]
        for lease in await self._leases.renew(held):
            log.error("shard %d: lease lost (not renewed in time); stopping it", lease.shard)
            await self._stop(lease.shard, release=False)
        for shard, serving in list(self._serving.items()):
            if serving.task.done():  # its loop ended (fenced out, or a bug): let it go
                await self._stop(shard, release=True)
        live = await self._leases.register()
        owners = await self._leases.owners(self._orchestrator.shards)
        now = time.monotonic()
        for shard in range(self._orchestrator.shards):
            preferred = preferred_owner(shard, live)
            if shard in self._serving:
                if preferred is not None and preferred != self.name:
                    log.info("shard %d: handing over to %s", shard, preferred)
                    await self._stop(shard, release=True)
                continue
            if shard in owners:
                self._free_since.pop(shard, None)
                continue
            since = self._free_since.setdefault(shard, now)
            if preferred == self.name or now - since >= self.settings.orphan_after_s:
                await self._take(shard)

    async def _take(self, shard: int) -> None:
        lease = await self._leases.acquire(shard)
        if lease is None:
            return
        self._free_since.pop(shard, None)
        stop = asyncio.Event()
        task = asyncio.create_task(self._serve(lease, stop))
        self._serving[shard] = _Serving(lease, stop, task)
        log.info("shard %d: taken with fencing token %d", shard, lease.token)

    def _consumer(self, shard: int) -> Consumer:
        return Consumer(
            self._redis,
            inbox_stream(shard),
            INBOX_GROUP,
            self.name,
            self.settings.consumer,
            on_dead_letter=tell_run_of_dead_letter(self._orchestrator.inbox),
        )

    async def _serve(self, lease: Lease, stop: asyncio.Event, *, burst: bool = False) -> None:
        """Take over the shard's pending inbox entries, recover its runs, serve it."""
        consumer = self._consumer(lease.shard)
        try:
            await consumer.ensure_group()
            taken = await consumer.take_over()
            if taken:
                log.info("shard %d: took over %d pending inbox entries", lease.shard, taken)
            await self._orchestrator.take_shard(lease)
            await serve(consumer, InboxMessage, self._handler(lease), burst=burst, stop=stop)
        except Exception:
            log.exception("shard %d: serving stopped", lease.shard)
            lease.lost = True

    def _handler(self, lease: Lease) -> Callable[[InboxMessage], Awaitable[None]]:
        async def handle(message: InboxMessage) -> None:
            if not lease.valid():
                raise LeaseLost(f"shard {lease.shard}: lease no longer certain")
            await self._orchestrator.handle(message)

        return handle

    async def _stop(self, shard: int, *, release: bool) -> None:
        serving = self._serving.pop(shard, None)
        if serving is None:
            return
        serving.stop.set()
        try:
            await asyncio.wait_for(serving.task, timeout=self.settings.lease_ttl_s)
        except TimeoutError:
            serving.task.cancel()
        self._orchestrator.drop_shard(shard)
        if release:
            with contextlib.suppress(*REDIS_DOWN):
                await self._leases.release([shard])

    async def stop_all(self, *, release: bool) -> None:
        for shard in list(self._serving):
            await self._stop(shard, release=release)
        if release:
            with contextlib.suppress(*REDIS_DOWN):
                await self._leases.unregister()

    async def _housekeeping(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.settings.deadline_check_s)
            try:
                await self._orchestrator.expire_overdue()
            except REDIS_DOWN:
                pass
            except Exception:
                log.exception("reporting overdue waits failed")
            try:
                await self._orchestrator.retry_archives()
            except REDIS_DOWN:
                pass
            except Exception:
                log.exception("writing the failed archives again failed")

    async def _burst(self) -> None:
        """Every free shard, served until idle, then released."""
        await self._leases.register()
        leases = [
            lease
            for shard in range(self._orchestrator.shards)
            if (lease := await self._leases.acquire(shard)) is not None
        ]
        try:
            await asyncio.gather(
                *(self._serve(lease, asyncio.Event(), burst=True) for lease in leases)
            )
        finally:
            for lease in leases:
                self._orchestrator.drop_shard(lease.shard)
            await self._leases.release([lease.shard for lease in leases])
            await self._leases.unregister()
