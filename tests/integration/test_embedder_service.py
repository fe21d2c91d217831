"""The embedder on a real Redis with the real model: tasks from ``tasks:embed`` of
several runs embedded in one model call, answered in the orchestrator's inbox as
``ReflectionEmbedded`` events, acked after; malformed entries dead-lettered; a task
for another model refused; a lone task answered at once; the entry point in burst
mode."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
import redis.asyncio as aioredis

from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve_batches
from contreact_bus.streams.task_stream import TaskStream
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.handler import EmbedHandler
from contreact_embedder.main import run
from contreact_embedder.settings import EmbedderSettings
from contreact_events.catalog.diversity import (
    EmbeddingFailed,
    ParagraphsChecked,
    ReflectionEmbedded,
)
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    EMBED_GROUP,
    EMBED_TASKS_STREAM,
    SERVICES_HEARTBEAT,
)
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import EmbedTask, InboxMessage
from tests.support.inbox import INBOX, use_one_shard

pytestmark = [pytest.mark.redis, pytest.mark.slow]

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
FAST = ConsumerSettings(block_ms=20, batch_size=32, reclaim_every_s=0.0)
LONG = " ".join(f"thought{i % 89} about the operator and my memory" for i in range(15_000))


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


@pytest.fixture(scope="session")
def service() -> EmbeddingService:
    """On the runtime the service runs by default (``onnx``)."""
    return EmbeddingService(runtime=EmbedderSettings().runtime)


def task(task_id: str, run_id: str, text: str, cycle: int = 1, **extra: Any) -> EmbedTask:
    return EmbedTask(
        task_id=task_id,
        run_id=run_id,
        cycle=cycle,
        text=text,
        model=extra.get("model", "all-MiniLM-L6-v2"),
    )


async def send(aredis: aioredis.Redis, *tasks: EmbedTask) -> None:
    stream = TaskStream(aredis, EMBED_TASKS_STREAM)
    for t in tasks:
        await stream.send(t)


def handler(aredis: aioredis.Redis, service: EmbeddingService) -> EmbedHandler:
    return EmbedHandler(service, aredis, Inbox(aredis, 1), EmbedderSettings().archive_dir)


async def drain(aredis: aioredis.Redis, service: EmbeddingService, name: str = "w1") -> int:
    consumer = Consumer(aredis, EMBED_TASKS_STREAM, EMBED_GROUP, name, FAST)
    return await serve_batches(consumer, EmbedTask, handler(aredis, service), burst=True)


async def inbox(aredis: aioredis.Redis) -> list[InboxMessage]:
    entries: Any = await aredis.xrange(INBOX)
    return [message_from_fields(InboxMessage, fields) for _id, fields in entries]


async def pending(aredis: aioredis.Redis) -> int:
    info = await aredis.xpending(EMBED_TASKS_STREAM, EMBED_GROUP)
    return int(info["pending"])


def embedded(message: InboxMessage) -> ReflectionEmbedded:
    event = message.to_event(T0)
    assert isinstance(event, ReflectionEmbedded)
    return event


def failed(message: InboxMessage) -> EmbeddingFailed:
    event = message.to_event(T0)
    assert isinstance(event, EmbeddingFailed)
    return event


async def test_waiting_tasks_of_two_runs_are_embedded_in_one_model_call(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    texts = [
        "I wrote a plan for exploring my memory tools.",
        "I asked the operator what they would like me to learn.",
        "This cycle I wrote a plan for exploring my memory tools.",
        LONG,
    ]
    await send(
        aredis,
        task("a1", "run-a", texts[0], cycle=1),
        task("b1", "run-b", texts[1], cycle=1),
        task("a2", "run-a", texts[2], cycle=2),
        task("b2", "run-b", texts[3], cycle=2),
    )
    calls = service.model_calls
    assert await drain(aredis, service) == 4
    assert service.model_calls == calls + 1

    events = [embedded(m) for m in await inbox(aredis)]
    assert [(e.run_id, e.causation_id, e.task_id, e.cycle) for e in events] == [
        ("run-a", "a1", "a1", 1),
        ("run-b", "b1", "b1", 1),
        ("run-a", "a2", "a2", 2),
        ("run-b", "b2", "b2", 2),
    ]
    assert {e.model for e in events} == {"all-MiniLM-L6-v2"}
    assert {e.runtime for e in events} == {service.runtime} == {"onnx"}
    assert [e.truncated for e in events] == [False, False, False, True]
    for event, text in zip(events, texts, strict=True):
        assert len(event.vector) == 384
        assert float(np.linalg.norm(event.vector)) == pytest.approx(1.0, abs=1e-5)
        np.testing.assert_allclose(event.vector, service.embed(text).vector, atol=1e-5)
    assert float(np.dot(events[0].vector, events[2].vector)) > 0.9
    assert await pending(aredis) == 0


async def test_tasks_are_acked_only_after_the_answers_are_in_the_inbox(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    await aredis.set(INBOX, "not a stream")  # the inbox write fails (WRONGTYPE)
    await send(aredis, task("t1", "run-a", "one"), task("t2", "run-b", "two"))
    assert await drain(aredis, service) == 0
    assert await pending(aredis) == 2

    await aredis.delete(INBOX)
    assert await drain(aredis, service) == 2  # its own pending entries, after a restart
    assert [embedded(m).task_id for m in await inbox(aredis)] == ["t1", "t2"]
    assert await pending(aredis) == 0


async def test_malformed_entries_are_dead_lettered_and_the_rest_embedded(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    await send(aredis, task("t1", "run-a", "before"))
    await aredis.xadd(EMBED_TASKS_STREAM, {"msg": b"{not json"})
    lone_surrogate = (
        b'{"task_id": "t9", "run_id": "run-a", "cycle": 1, "text": "bad \\ud800 text", '
        b'"model": "all-MiniLM-L6-v2"}'
    )
    await aredis.xadd(EMBED_TASKS_STREAM, {"msg": lone_surrogate})
    await aredis.xadd(EMBED_TASKS_STREAM, {"something": b"else"})
    await send(aredis, task("t2", "run-b", "after"))
    calls = service.model_calls
    assert await drain(aredis, service) == 2
    assert service.model_calls == calls + 1
    dead: Any = await aredis.xrange(DEAD_LETTER_STREAM)
    assert len(dead) == 3
    assert all(fields[b"reason"].startswith(b"cannot decode") for _id, fields in dead)
    assert [embedded(m).task_id for m in await inbox(aredis)] == ["t1", "t2"]
    assert await pending(aredis) == 0


async def test_a_task_for_another_model_fails_alone(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    await send(
        aredis,
        task("t1", "run-a", "", model="sentence-transformers/all-MiniLM-L6-v2"),
        task("t2", "run-b", "hello", model="nomic-embed-text"),
    )
    assert await drain(aredis, service) == 2
    first, second = await inbox(aredis)
    assert len(embedded(first).vector) == 384  # empty text: embedded all the same
    refused = failed(second)
    assert (refused.task_id, refused.run_id, refused.cycle) == ("t2", "run-b", 1)
    assert "serves all-MiniLM-L6-v2, not 'nomic-embed-text'" in refused.error
    assert await pending(aredis) == 0


async def test_a_text_the_model_cannot_take_is_answered_embedding_failed(
    aredis: aioredis.Redis, service: EmbeddingService, monkeypatch: pytest.MonkeyPatch
) -> None:
    encode = service._encode

    def encode_breaking_on_poison(inputs: list[str]) -> Any:
        if any("poison" in text for text in inputs):
            raise RuntimeError("the model choked")
        return encode(inputs)

    monkeypatch.setattr(service, "_encode", encode_breaking_on_poison)
    await send(
        aredis,
        task("t1", "run-a", "fine"),
        task("t2", "run-b", "poison"),
        task("t3", "run-c", "fine too"),
    )
    assert await drain(aredis, service) == 3
    kinds = [m.kind for m in await inbox(aredis)]
    assert kinds == ["ReflectionEmbedded", "EmbeddingFailed", "ReflectionEmbedded"]
    assert "the model choked" in failed((await inbox(aredis))[1]).error
    assert await pending(aredis) == 0


async def test_a_lone_task_is_answered_at_once(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    settings = ConsumerSettings(block_ms=200, batch_size=32)
    consumer = Consumer(aredis, EMBED_TASKS_STREAM, EMBED_GROUP, "w1", settings)
    await consumer.ensure_group()
    stop = asyncio.Event()
    worker = asyncio.create_task(
        serve_batches(consumer, EmbedTask, handler(aredis, service), stop=stop)
    )
    await asyncio.sleep(0.1)  # the worker is blocked in XREADGROUP
    service.embed("warm up")
    single = time.perf_counter()
    service.embed("A lone reflection, sent when nothing else waits.")
    single = time.perf_counter() - single

    calls = service.model_calls
    started = time.perf_counter()
    await send(aredis, task("t1", "run-a", "A lone reflection, sent when nothing else waits."))
    reply: Any = await aredis.xread({INBOX: "0"}, block=3_000)
    latency = time.perf_counter() - started
    stop.set()
    assert await worker == 1  # returns once its blocking read (200 ms) times out

    assert reply, "no answer within 3 s"
    assert service.model_calls == calls + 1
    assert [embedded(m).task_id for m in await inbox(aredis)] == ["t1"]
    assert latency < single + 0.25  # no waiting for company
    assert await pending(aredis) == 0


async def test_the_entry_point_serves_in_burst_mode(
    aredis: aioredis.Redis, redis_url: str, service: EmbeddingService
) -> None:
    await send(aredis, task("t1", "run-a", "one"), task("t2", "run-b", "two"))
    settings = EmbedderSettings(redis_url=redis_url, consumer_name="unit", block_ms=20)
    assert await run(settings, service, burst=True) == 2
    assert [embedded(m).task_id for m in await inbox(aredis)] == ["t1", "t2"]
    assert await aredis.hget(SERVICES_HEARTBEAT, "embedder:unit") is not None
    assert await pending(aredis) == 0


async def test_a_task_with_a_bad_setting_or_corpus_fails_alone(
    aredis: aioredis.Redis, service: EmbeddingService
) -> None:
    """One run's invalid pattern, another's corrupt log: each fails its own task; the
    batch mates of other runs are answered, and nothing stays pending."""
    paragraph = "A long enough paragraph about tides, moons and the shape of the coast here."

    def check(task_id: str, run_id: str, **extra: Any) -> EmbedTask:
        return EmbedTask(
            kind="paragraphs",
            task_id=task_id,
            run_id=run_id,
            cycle=1,
            text=paragraph,
            model="all-MiniLM-L6-v2",
            scope=f"run:{run_id}",
            **extra,
        )

    await aredis.xadd("run:{run-corrupt}", {"type": "RunRequested", "event": b"{not json"})
    await send(
        aredis,
        check("p1", "run-pattern", extra_patterns=("(unclosed",)),
        task("r1", "run-fine", "I mapped the tides."),
        check("p2", "run-corrupt"),
        check("p3", "run-fine2"),
        # A recorded config is not re-judged when read: a pattern no linear-time engine
        # can match (a backreference) reaches the embedder, and fails its check alone.
        check("p4", "run-backref", extra_patterns=("(a)\\1",)),
    )
    assert await drain(aredis, service) == 5
    answers = {m.causation_id: m for m in await inbox(aredis)}
    assert answers["r1"].kind == "ReflectionEmbedded"
    assert answers["p3"].kind == "ParagraphsChecked"
    checked = answers["p3"].to_event(T0)
    assert isinstance(checked, ParagraphsChecked)
    assert checked.runtime == service.runtime == "onnx"
    assert "the paragraph check failed" in failed(answers["p1"]).error
    assert "the paragraph check failed" in failed(answers["p2"]).error
    assert "uses a backreference" in failed(answers["p4"]).error
    assert await pending(aredis) == 0
