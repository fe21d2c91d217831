"""The consumer side of a task stream: one named consumer of a consumer group.
Competing consumers share a stream; an entry read is *held* and its claim kept
fresh while the work runs; only a consumer gone silent has its entries reclaimed
(XAUTOCLAIM); an entry that cannot be decoded or keeps failing goes to the dead
letters; housekeeping keeps Redis bounded. The loop that serves a consumer is in
``serving``; the producer side in ``task_stream``.

A consumer reads only as many entries as it has free slots (an entry taken is an entry
being worked on), renews its claims on what it holds every quarter of the reclaim idle
time (``XCLAIM ... JUSTID`` to itself), and reclaims with ``XAUTOCLAIM`` only entries
idle longer than ``reclaim_idle_ms``: a 10-minute call runs once. A handler that fails
lets go of its entry, to be reclaimed and tried again; an entry that cannot be decoded
or processed, or was delivered ``max_deliveries`` times, goes to the dead letters with
the reason and its fields (capped), and its run is told (``TaskFailed``, cause
``dead_lettered``). Acks travel with the next read. Housekeeping (every 30 s) trims the
stream below the oldest pending entry and the last delivered one (``XTRIM MINID``: what
every consumer is done with) and removes consumers that hold nothing and have not read
for ``forget_consumer_after_s``; the producer's length cap stays as a safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from contreact_bus.backoff import REDIS_DOWN
from contreact_bus.replies import as_bytes, entries, entry_id_pair, stream_entries, stream_fields
from contreact_events.names import DEAD_LETTER_STREAM

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerSettings:
    block_ms: int = 1000
    batch_size: int = 16
    reclaim_idle_ms: int = 10_000
    """An entry whose consumer has not refreshed its claim for this long is taken over
    (a live consumer refreshes every ``refresh_every_s``, however long the work runs)."""
    reclaim_every_s: float = 2.0
    refresh_every_s: float | None = None
    """How often the claims on entries in hand are renewed (default: a quarter of the
    reclaim idle time)."""
    max_deliveries: int = 5
    """An entry delivered this many times without an ack goes to the dead letters."""
    housekeeping_every_s: float = 30.0
    """How often acked entries are trimmed and forgotten consumers removed."""
    forget_consumer_after_s: float = 600.0
    """A consumer with nothing pending and no successful read for this long is removed
    from the group (a live one is added back by its next read)."""
    dead_letter_maxlen: int = 10_000

    @property
    def refresh_s(self) -> float:
        if self.refresh_every_s is not None:
            return self.refresh_every_s
        return self.reclaim_idle_ms / 4000


@dataclass(frozen=True)
class Delivery:
    entry_id: bytes
    fields: dict[bytes, bytes]
    deliveries: int = 1


DeadLetterHook = Callable[[Delivery, str], Awaitable[None]]
"""Called after an entry was dead-lettered (e.g. to tell its run the task failed)."""


class Consumer:
    """One named consumer of a stream's group.

    Entries it has read and not yet acked are *held*: their claims are renewed while
    the work runs (``refresh``), so only a consumer that went silent loses them, and
    it never takes back, through a reclaim, an entry it already holds.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        stream: str,
        group: str,
        name: str,
        settings: ConsumerSettings = ConsumerSettings(),
        *,
        on_dead_letter: DeadLetterHook | None = None,
    ) -> None:
        self._redis = redis
        self.stream = stream
        self.group = group
        self.name = name
        self.settings = settings
        self._on_dead_letter = on_dead_letter
        self._next_reclaim = 0.0
        self._own_pending_checked = False
        self._acks: list[bytes] = []
        self.held: set[bytes] = set()

    async def ensure_group(self) -> None:
        try:
            await self._redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def read(self, *, block: bool = True, count: int | None = None) -> list[Delivery]:
        """This consumer's own unacked entries once after a (re)start, then entries
        reclaimed from silent consumers (when due), then new ones; at most ``count``
        (default ``batch_size``) new ones, never one it already holds."""
        count = self.settings.batch_size if count is None else count
        out: list[Delivery] = []
        if not self._own_pending_checked:
            out += await self._read_group("0", block=False, count=self.settings.batch_size)
            self._own_pending_checked = len(out) < self.settings.batch_size
        out += await self._reclaim_if_due()
        if not out:
            out = await self._read_group(">", block=block, count=count)
        fresh = []
        for delivery in out:
            if delivery.entry_id not in self.held:
                self.held.add(delivery.entry_id)
                fresh.append(delivery)
        return fresh

    async def _read_group(self, start: str, *, block: bool, count: int) -> list[Delivery]:
        """XREADGROUP, with the acks waiting to be sent ahead of it in one round trip."""
        acks, self._acks = self._acks, []
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                if acks:
                    pipe.xack(self.stream, self.group, *acks)
                pipe.xreadgroup(
                    self.group,
                    self.name,
                    {self.stream: start},
                    count=count,
                    block=self.settings.block_ms if block else None,
                )
                reply = (await pipe.execute())[-1]
        except BaseException:
            self._acks = acks + self._acks  # not sent: they go with the next read
            raise
        out = []
        for entry_id, fields in stream_entries(reply):
            if fields is None:  # trimmed while pending
                await self.ack(entry_id)
                continue
            out.append(Delivery(entry_id, fields, 2 if start == "0" else 1))
        return out

    async def _reclaim_if_due(self) -> list[Delivery]:
        now = time.monotonic()
        if now < self._next_reclaim:
            return []
        self._next_reclaim = now + self.settings.reclaim_every_s
        return await self.reclaim()

    async def reclaim(self) -> list[Delivery]:
        """Take over entries idle longer than ``reclaim_idle_ms``: their consumer has
        stopped refreshing its claims, so it is dead or cut off."""
        reply = await self._redis.xautoclaim(
            self.stream,
            self.group,
            self.name,
            min_idle_time=self.settings.reclaim_idle_ms,
            start_id="0-0",
            count=self.settings.batch_size,
        )
        claimed = entries(reply[1]) if reply else []
        deleted = reply[2] if reply and len(reply) > 2 else []
        if deleted:
            log.warning(
                "%s: %d pending entries were trimmed before delivery", self.stream, len(deleted)
            )
        claimed = [(eid, fields) for eid, fields in claimed if fields and eid not in self.held]
        if not claimed:
            return []
        counts = await self._delivery_counts([entry_id for entry_id, _ in claimed])
        return [Delivery(eid, fields, counts.get(eid, 2)) for eid, fields in claimed]

    async def take_over(self) -> int:
        """Claim every pending entry of the group, whoever holds it, and read them
        first: for the sole owner of a stream that just took it over (an inbox shard's
        new orchestrator). Each take-over counts as a delivery, so an entry that
        crashes every owner ends in the dead letters."""
        start: Any = "0-0"
        taken = 0
        while True:
            reply = await self._redis.xautoclaim(
                self.stream, self.group, self.name, min_idle_time=0, start_id=start, count=500
            )
            taken += len(reply[1])
            start = reply[0]
            if entry_id_pair(start) == (0, 0):
                break
        self._own_pending_checked = False
        return taken

    async def _delivery_counts(self, ids: Sequence[bytes]) -> dict[bytes, int]:
        pending = await self._redis.xpending_range(
            self.stream, self.group, min=min(ids), max=max(ids), count=len(ids) * 4
        )
        return {as_bytes(p["message_id"]): int(p["times_delivered"]) for p in pending}

    async def refresh(self) -> None:
        """Renew the claims on every held entry (XCLAIM JUSTID to itself: idle time back
        to zero, delivery count unchanged). An entry another consumer took meanwhile
        (this one was cut off for longer than the reclaim time) is let go, with a
        warning: its work may run twice, which results tolerate."""
        held = sorted(self.held)
        if not held:
            return
        ids: list[Any] = list(held)
        claimed = await self._redis.xclaim(self.stream, self.group, self.name, 0, ids, justid=True)
        kept = {as_bytes(entry_id) for entry_id in claimed or []}
        for lost in set(held) - kept:
            if lost in self.held and lost not in self._acks:
                log.warning(
                    "%s: entry %s is no longer this consumer's (%s): it may run twice",
                    self.stream,
                    lost.decode(),
                    self.name,
                )
                self.held.discard(lost)

    def release(self, entry_id: bytes) -> None:
        """Stop holding an entry without acking it (its handling failed): once its
        claim goes stale, a consumer reclaims it and it is tried again."""
        self.held.discard(entry_id)

    async def ack(self, *entry_ids: bytes) -> None:
        if entry_ids:
            await self._redis.xack(self.stream, self.group, *entry_ids)
        self.held.difference_update(entry_ids)

    def ack_later(self, entry_id: bytes) -> None:
        """Ack with the next read, in the same round trip (the result is written
        already; a crash before then only means one more harmless redelivery)."""
        self._acks.append(entry_id)
        self.held.discard(entry_id)

    async def flush_acks(self) -> None:
        acks, self._acks = self._acks, []
        await self.ack(*acks)

    async def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Move an entry aside with the reason; it never blocks the group again. The
        hook (if any) then tells whoever waits on it."""
        record: dict[str, Any] = {
            "stream": self.stream,
            "group": self.group,
            "entry_id": delivery.entry_id,
            "reason": reason,
            "deliveries": delivery.deliveries,
            "consumer": self.name,
        }
        for key, value in delivery.fields.items():
            record[f"field:{key.decode(errors='replace')}"] = value
        await self._redis.xadd(
            DEAD_LETTER_STREAM,
            stream_fields(record),
            maxlen=self.settings.dead_letter_maxlen,
            approximate=True,
        )
        await self.ack(delivery.entry_id)
        log.error("dead-lettered %s %s: %s", self.stream, delivery.entry_id.decode(), reason)
        if self._on_dead_letter is not None:
            try:
                await self._on_dead_letter(delivery, reason)
            except Exception:
                log.exception("%s: telling about dead letter %s failed", self.stream, reason)

    async def housekeep(self) -> tuple[int, int]:
        """Trim the entries every consumer is done with (acked, below the oldest
        pending and the last delivered one), and remove consumers that hold nothing
        and have not read for ``forget_consumer_after_s``. Returns (trimmed, removed)."""
        groups = await self._redis.xinfo_groups(self.stream)
        mine = [g for g in groups if as_bytes(g["name"]) == self.group.encode()]
        if not mine:
            return 0, 0
        cutoff = entry_id_pair(mine[0]["last-delivered-id"])
        summary = await self._redis.xpending(self.stream, self.group)
        if summary["pending"]:
            cutoff = min(cutoff, entry_id_pair(summary["min"]))
        trimmed = 0
        if cutoff > (0, 0):
            trimmed = int(
                await self._redis.xtrim(
                    self.stream, minid=f"{cutoff[0]}-{cutoff[1]}", approximate=True
                )
            )
        removed = 0
        forget_ms = self.settings.forget_consumer_after_s * 1000
        for consumer in await self._redis.xinfo_consumers(self.stream, self.group):
            name = as_bytes(consumer["name"]).decode()
            if name != self.name and not consumer["pending"] and consumer["idle"] > forget_ms:
                await self._redis.xgroup_delconsumer(self.stream, self.group, name)
                removed += 1
        return trimmed, removed

    async def keep_claims(self, stop: asyncio.Event) -> None:
        """Beside the consume loop: renew the claims in hand, and keep house now and
        then, until ``stop``. Redis being away is waited out, never fatal."""
        next_housekeeping = time.monotonic() + self.settings.housekeeping_every_s
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.settings.refresh_s)
            if stop.is_set():
                return
            try:
                await self.refresh()
                if time.monotonic() >= next_housekeeping:
                    next_housekeeping = time.monotonic() + self.settings.housekeeping_every_s
                    await self.housekeep()
            except REDIS_DOWN as exc:
                log.debug("%s: claims not renewed (%s)", self.stream, exc)
            except Exception:
                log.exception("%s: renewing claims failed", self.stream)


STALE_IDLE_MS = 10**9
"""The idle time given to a dead consumer's entries: past any reclaim threshold."""


async def release_consumer(redis: aioredis.Redis, stream: str, group: str, consumer: str) -> int:
    """Mark every entry a dead consumer holds as stale, so that the next reclaim pass
    of any live consumer takes it (instead of after the reclaim idle time). Only for a
    consumer known to be dead: the supervisor calls it for a child it saw die. The
    entries keep their owner and delivery count until reclaimed. Returns how many."""
    try:
        pending = await redis.xpending_range(
            stream, group, min="-", max="+", count=10_000, consumername=consumer
        )
    except ResponseError:  # no such stream or group
        return 0
    ids: list[Any] = [p["message_id"] for p in pending]
    if not ids:
        return 0
    await redis.xclaim(stream, group, consumer, 0, ids, idle=STALE_IDLE_MS, justid=True)
    return len(ids)
