"""The loop that serves a consumer: one loop for single and batched tasks.

It reads entries as slots free up, decodes them (dead-lettering what cannot be
decoded or was delivered too often), hands them to the handler in batches of at
most ``batch_size`` (``serve``: batches of one), and acks an entry only after the
handler returned (its result written). The consumer's claims are renewed beside
the loop while the work runs; Redis going away is waited out.

``serve`` is the loop with batches of one (the orchestrator, the LLM worker, the memory
service): there a handler's ``ContReActEventError`` dead-letters its entry at once. The
serial consumers (inbox shards, memory) read up to ``batch_size`` entries at once and
handle them in order, each acked with the next read once handled: under load one read
and one wake-up serve many entries; entries read and not yet handled are held like the
one in hand, and a stop lets go of the rest for the next owner. The embedder passes its
micro-batches (``batch_size`` None: everything one read returned); a batch handler
answers a bad message itself, and a batch whose handler raised is let go whole, to be
retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from pydantic import BaseModel
from redis.exceptions import ResponseError

from contreact_bus.backoff import REDIS_DOWN, Backoff
from contreact_bus.streams.consumer import Consumer, Delivery
from contreact_events.exceptions import ContReActEventError
from contreact_events.wire.codec import message_from_fields

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


async def serve(
    consumer: Consumer,
    model: type[M],
    handle: Callable[[M], Awaitable[None]],
    *,
    burst: bool = False,
    concurrency: int = 1,
    stop: asyncio.Event | None = None,
) -> int:
    """Decode each entry as ``model`` and hand it to ``handle``; ack once it returns:
    ``serve_batches`` with batches of one, ``concurrency`` of them at once. A serial
    consumer (``concurrency`` 1: the orchestrator's inbox, the memory service) reads
    up to its ``batch_size`` entries at once and handles them in order, one after the
    other: under load one read (and one wake-up) serves many entries (issue 20).

    ``handle`` must have written its result before returning. An entry whose
    ``handle`` raised a ContReActEventError (it cannot be processed) goes to the
    dead letters; anything else raised lets go of it, to be retried once reclaimed.
    """

    async def one(messages: list[M]) -> None:
        await handle(messages[0])

    return await serve_batches(
        consumer,
        model,
        one,
        batch_size=1,
        concurrency=concurrency,
        burst=burst,
        stop=stop,
        per_read=consumer.settings.batch_size if concurrency == 1 else None,
    )


async def serve_batches(
    consumer: Consumer,
    model: type[M],
    handle: Callable[[list[M]], Awaitable[None]],
    *,
    batch_size: int | None = None,
    concurrency: int = 1,
    burst: bool = False,
    stop: asyncio.Event | None = None,
    per_read: int | None = None,
) -> int:
    """Hand ``handle`` the decoded entries in batches, ``concurrency`` batches at
    once; ack a batch once ``handle`` returns. Returns how many entries were handled.

    With ``batch_size`` None, a batch is every entry one read returned (up to the
    consumer's ``batch_size`` new ones): micro-batching without a timer, so a lone
    entry is handled as soon as it arrives. The loop reads only as many entries as
    its free slots take: an entry taken is an entry being worked on.

    ``handle`` must have written a result for every message before returning. In
    batches of more than one it answers a message it cannot process itself (one bad
    message must not fail its batch): if it raises, every entry of the batch is let
    go, to be retried when reclaimed. ``per_read``: how many entries one read may take
    per free slot (default: ``batch_size``, else the consumer's); with ``concurrency`` 1
    a read's batches are handled in order, one after the other. With ``batch_size`` 1 a
    ContReActEventError is
    the message's own: it is dead-lettered at once. An entry that cannot be decoded,
    or was delivered ``max_deliveries`` times, is dead-lettered and left out. With
    ``burst`` it returns once the stream has nothing more to give.
    """
    backoff = Backoff(f"{consumer.stream} ({consumer.name})")
    await ensure_group_resiliently(consumer, backoff)
    if per_read is None:
        per_read = consumer.settings.batch_size if batch_size is None else batch_size
    running: set[asyncio.Task[None]] = set()
    handled = 0
    stopping = stop or asyncio.Event()
    done = asyncio.Event()
    keeper = asyncio.create_task(consumer.keep_claims(done))

    async def work(taken: list[Delivery], messages: list[M]) -> None:
        nonlocal handled
        try:
            await handle(messages)
        except Exception as exc:
            if batch_size == 1 and isinstance(exc, ContReActEventError):
                with contextlib.suppress(*REDIS_DOWN):
                    await consumer.dead_letter(taken[0], f"cannot process: {exc}")
                    return
            else:
                _log_failure(consumer, taken)
            for delivery in taken:
                consumer.release(delivery.entry_id)
        else:
            for delivery in taken:
                consumer.ack_later(delivery.entry_id)
            handled += len(taken)

    try:
        while not stopping.is_set():
            free = concurrency - len(running)
            if free <= 0:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                continue
            deliveries = await read_resiliently(
                consumer, backoff, block=not burst, count=free * per_read
            )
            if deliveries is None:
                continue
            if not deliveries and burst and not running:
                break
            admitted: list[tuple[Delivery, M]] = []
            for delivery in deliveries:
                message = await _admit(consumer, model, delivery)
                if message is not None:
                    admitted.append((delivery, message))
            batches = list(_batches(admitted, batch_size))
            if concurrency == 1:  # the hot path: in order, no task to make and wait for
                for taken, messages in batches:
                    if stopping.is_set():  # the rest is let go (a new owner takes it over)
                        for delivery in taken:
                            consumer.release(delivery.entry_id)
                        continue
                    await work(taken, messages)
                continue
            for taken, messages in batches:
                task = asyncio.create_task(work(taken, messages))
                running.add(task)
                task.add_done_callback(running.discard)
            if burst and running and not deliveries:
                await asyncio.gather(*running)
        if running:
            await asyncio.gather(*running)
        with contextlib.suppress(*REDIS_DOWN):
            await consumer.flush_acks()
    finally:
        for task in running:  # left only when the loop itself failed or was cancelled
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        done.set()
        await keeper
    return handled


def _batches(
    admitted: list[tuple[Delivery, M]], size: int | None
) -> Iterator[tuple[list[Delivery], list[M]]]:
    """The admitted entries in batches of ``size`` (None: all in one)."""
    step = size or len(admitted) or 1
    for start in range(0, len(admitted), step):
        chunk = admitted[start : start + step]
        yield [delivery for delivery, _ in chunk], [message for _, message in chunk]


def _log_failure(consumer: Consumer, taken: list[Delivery]) -> None:
    what = taken[0].entry_id.decode() if len(taken) == 1 else f"a batch of {len(taken)}"
    log.exception("%s: handling %s failed; it will be retried", consumer.stream, what)


async def _admit(consumer: Consumer, model: type[M], delivery: Delivery) -> M | None:
    """The decoded message, or None once the entry is dead-lettered (delivered too
    often, or not a ``model``)."""
    try:
        if delivery.deliveries > consumer.settings.max_deliveries:
            await consumer.dead_letter(
                delivery, f"delivered {delivery.deliveries} times without success"
            )
            return None
        try:
            return message_from_fields(model, delivery.fields)
        except ContReActEventError as exc:
            await consumer.dead_letter(delivery, f"cannot decode: {exc}")
            return None
    except REDIS_DOWN:
        consumer.release(delivery.entry_id)
        return None


async def read_resiliently(
    consumer: Consumer, backoff: Backoff, *, block: bool, count: int | None = None
) -> list[Delivery] | None:
    """``consumer.read``, or None after waiting out a Redis that is away (or re-making
    a group that a Redis restart lost)."""
    try:
        deliveries = await consumer.read(block=block, count=count)
    except REDIS_DOWN as exc:
        await backoff.wait(exc)
        return None
    except ResponseError as exc:
        if "NOGROUP" not in str(exc):
            raise
        log.warning("%s: the group %s is gone; making it again", consumer.stream, consumer.group)
        try:
            await consumer.ensure_group()
        except REDIS_DOWN as down:
            await backoff.wait(down)
        return None
    backoff.reset()
    return deliveries


async def ensure_group_resiliently(consumer: Consumer, backoff: Backoff) -> None:
    while True:
        try:
            await consumer.ensure_group()
            backoff.reset()
            return
        except REDIS_DOWN as exc:
            await backoff.wait(exc)
