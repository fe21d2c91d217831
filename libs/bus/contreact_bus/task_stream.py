"""Task streams read through consumer groups: competing consumers, ack after the
result is written, reclaim of a dead consumer's entries (XAUTOCLAIM), and a
dead-letter stream for entries that cannot be decoded or keep failing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.client import Pipeline
from redis.exceptions import ResponseError

from contreact_bus.replies import entries, stream_entries
from contreact_events.codec import message_from_fields, message_to_fields
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import DEAD_LETTER_STREAM

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAXLEN = 100_000


@dataclass(frozen=True)
class ConsumerSettings:
    block_ms: int = 1000
    batch_size: int = 16
    reclaim_idle_ms: int = 60_000
    """An entry pending this long on a silent consumer is taken over by another."""
    reclaim_every_s: float = 5.0
    max_deliveries: int = 5
    """An entry delivered this many times without an ack goes to the dead letters."""


@dataclass(frozen=True)
class Delivery:
    entry_id: bytes
    fields: dict[bytes, bytes]
    deliveries: int = 1


class TaskStream:
    """Producer side of a stream (tasks, or the orchestrator's inbox)."""

    def __init__(self, redis: aioredis.Redis, stream: str, *, maxlen: int = DEFAULT_MAXLEN):
        self._redis = redis
        self.stream = stream
        self._maxlen = maxlen

    async def send(self, message: BaseModel) -> bytes:
        entry_id = await self._redis.xadd(
            self.stream, _fields(message_to_fields(message)), maxlen=self._maxlen, approximate=True
        )
        return _b(entry_id)

    def queue(self, pipe: Pipeline, message: BaseModel) -> None:
        """Add a send to a caller's pipeline (no round trip of its own)."""
        fields = _fields(message_to_fields(message))
        pipe.xadd(self.stream, fields, maxlen=self._maxlen, approximate=True)


class Consumer:
    """One named consumer of a stream's group."""

    def __init__(
        self,
        redis: aioredis.Redis,
        stream: str,
        group: str,
        name: str,
        settings: ConsumerSettings = ConsumerSettings(),
    ) -> None:
        self._redis = redis
        self.stream = stream
        self.group = group
        self.name = name
        self.settings = settings
        self._next_reclaim = 0.0
        self._own_pending_checked = False
        self._acks: list[bytes] = []

    async def ensure_group(self) -> None:
        try:
            await self._redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def read(self, *, block: bool = True) -> list[Delivery]:
        """This consumer's own unacked entries once after a restart, then entries
        reclaimed from silent consumers (when due), then new ones."""
        out: list[Delivery] = []
        if not self._own_pending_checked:
            self._own_pending_checked = True
            out += await self._read_group("0", block=False)
        seen = {d.entry_id for d in out}
        out += [d for d in await self._reclaim_if_due() if d.entry_id not in seen]
        if out:
            return out
        return await self._read_group(">", block=block)

    async def _read_group(self, start: str, *, block: bool) -> list[Delivery]:
        """XREADGROUP, with the acks waiting to be sent ahead of it in one round trip."""
        acks, self._acks = self._acks, []
        async with self._redis.pipeline(transaction=False) as pipe:
            if acks:
                pipe.xack(self.stream, self.group, *acks)
            pipe.xreadgroup(
                self.group,
                self.name,
                {self.stream: start},
                count=self.settings.batch_size,
                block=self.settings.block_ms if block else None,
            )
            reply = (await pipe.execute())[-1]
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
        """Take over entries idle longer than ``reclaim_idle_ms`` (a dead consumer's)."""
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
        if not claimed:
            return []
        counts = await self._delivery_counts([entry_id for entry_id, _ in claimed])
        return [Delivery(eid, fields, counts.get(eid, 2)) for eid, fields in claimed if fields]

    async def _delivery_counts(self, ids: Sequence[bytes]) -> dict[bytes, int]:
        pending = await self._redis.xpending_range(
            self.stream, self.group, min=min(ids), max=max(ids), count=len(ids) * 4
        )
        return {_b(p["message_id"]): int(p["times_delivered"]) for p in pending}

    async def ack(self, *entry_ids: bytes) -> None:
        if entry_ids:
            await self._redis.xack(self.stream, self.group, *entry_ids)

    def ack_later(self, entry_id: bytes) -> None:
        """Ack with the next read, in the same round trip (the result is written
        already; a crash before then only means one more harmless redelivery)."""
        self._acks.append(entry_id)

    async def flush_acks(self) -> None:
        acks, self._acks = self._acks, []
        await self.ack(*acks)

    async def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Move an entry aside with the reason; it never blocks the group again."""
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
        await self._redis.xadd(DEAD_LETTER_STREAM, _fields(record))
        await self.ack(delivery.entry_id)
        log.error("dead-lettered %s %s: %s", self.stream, delivery.entry_id.decode(), reason)


async def serve(
    consumer: Consumer,
    model: type[M],
    handle: Callable[[M], Awaitable[None]],
    *,
    burst: bool = False,
    concurrency: int = 1,
    stop: asyncio.Event | None = None,
) -> int:
    """Decode each entry as ``model`` and hand it to ``handle``; ack once it returns.

    ``handle`` must have written its result before returning. An entry that cannot
    be decoded or processed (``handle`` raised a ContReActEventError), or that was
    delivered ``max_deliveries`` times, goes to the dead letters. A handler that
    raises leaves its entry pending, to be retried when reclaimed. With ``burst``
    it returns once the stream has nothing more to give. Returns how many entries
    were handled.
    """
    await consumer.ensure_group()
    slots = asyncio.Semaphore(concurrency)
    running: set[asyncio.Task[None]] = set()
    handled = 0

    async def one(delivery: Delivery, message: M) -> None:
        nonlocal handled
        try:
            await handle(message)
        except ContReActEventError as exc:
            await consumer.dead_letter(delivery, f"cannot process: {exc}")
        except Exception:
            log.exception(
                "%s: handling %s failed; it stays pending",
                consumer.stream,
                delivery.entry_id.decode(),
            )
        else:
            consumer.ack_later(delivery.entry_id)
            handled += 1
        finally:
            slots.release()

    while stop is None or not stop.is_set():
        deliveries = await consumer.read(block=not burst)
        if not deliveries and burst:
            break
        for delivery in deliveries:
            if delivery.deliveries > consumer.settings.max_deliveries:
                await consumer.dead_letter(
                    delivery, f"delivered {delivery.deliveries} times without success"
                )
                continue
            try:
                message = message_from_fields(model, delivery.fields)
            except ContReActEventError as exc:
                await consumer.dead_letter(delivery, f"cannot decode: {exc}")
                continue
            await slots.acquire()
            task = asyncio.create_task(one(delivery, message))
            running.add(task)
            task.add_done_callback(running.discard)
        if burst and running:
            await asyncio.gather(*running)
    if running:
        await asyncio.gather(*running)
    await consumer.flush_acks()
    return handled


def _fields(fields: Mapping[str, Any]) -> Any:
    """Stream fields as redis-py's (invariant) annotation wants them."""
    return dict(fields)


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


async def serve_batches(
    consumer: Consumer,
    model: type[M],
    handle: Callable[[list[M]], Awaitable[None]],
    *,
    burst: bool = False,
    stop: asyncio.Event | None = None,
) -> int:
    """Like ``serve``, but hands ``handle`` every entry one read returned (up to the
    consumer's ``batch_size``), at once: micro-batching without a timer, so a lone
    entry is handled as soon as it arrives.

    ``handle`` must have written a result for every message before returning; then
    the whole batch is acked. It answers a message it cannot process itself (one bad
    message must not fail its batch): if it raises, every entry of the batch stays
    pending, to be retried when reclaimed, and dead-lettered after ``max_deliveries``.
    Entries that cannot be decoded are dead-lettered and left out of the batch.
    Returns how many entries were handled.
    """
    await consumer.ensure_group()
    handled = 0
    while stop is None or not stop.is_set():
        deliveries = await consumer.read(block=not burst)
        if not deliveries and burst:
            break
        taken: list[Delivery] = []
        messages: list[M] = []
        for delivery in deliveries:
            if delivery.deliveries > consumer.settings.max_deliveries:
                await consumer.dead_letter(
                    delivery, f"delivered {delivery.deliveries} times without success"
                )
                continue
            try:
                messages.append(message_from_fields(model, delivery.fields))
            except ContReActEventError as exc:
                await consumer.dead_letter(delivery, f"cannot decode: {exc}")
                continue
            taken.append(delivery)
        if not messages:
            continue
        try:
            await handle(messages)
        except Exception:
            log.exception(
                "%s: handling a batch of %d failed; it stays pending", consumer.stream, len(taken)
            )
            continue
        for delivery in taken:
            consumer.ack_later(delivery.entry_id)
        handled += len(taken)
    await consumer.flush_acks()
    return handled
