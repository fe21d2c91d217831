"""The LLM worker on a real Redis: tasks in, inbox messages out, ack after the answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.llm_routes import llm_task_stream
from contreact_bus.streams.consumer import Consumer
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cycle import LLMFailed, LLMResponded
from contreact_events.catalog.run import ModelChecked
from contreact_events.config import ScriptConfig
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    LLM_GROUP,
    LLM_TASKS_STREAM,
    SERVICES_HEARTBEAT,
)
from contreact_events.wire import task_history
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.backends import ChatOutcome, CheckOutcome
from contreact_llm.handler import LLMTaskHandler, build_handler
from contreact_llm.main import build_scheduler, run
from contreact_llm.settings import LLMWorkerSettings
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import ask_for

pytestmark = pytest.mark.redis

SCRIPT = ScriptConfig.model_validate(
    {
        "replies": [
            {"content": "note for cycle {cycle}"},
            {"tool_calls": [{"name": "read", "arguments": {"key": "k"}}]},
        ]
    }
)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def settings(redis_url: str) -> LLMWorkerSettings:
    return LLMWorkerSettings(
        redis_url=redis_url, consumer_name="test-worker", backoff_base_s=0.001, block_ms=100
    )


def task(task_id: str, **changes: Any) -> LLMTask:
    fields: dict[str, Any] = {"kind": "chat", "backend": "scripted", "script": SCRIPT, **changes}
    return LLMTask(
        task_id=task_id,
        run_id=f"run-{task_id}",
        model="m",
        host="",
        cycle=4,
        messages=(ChatMessage(role="user", content="hi"),),
        **fields,
    )


async def queue(redis: aioredis.Redis, *tasks: LLMTask) -> None:
    """Send tasks as an orchestrator would: each one recorded as its run's pending task."""
    stream = TaskStream(redis, LLM_TASKS_STREAM)
    for t in tasks:
        await ask_for(redis, t.run_id, t)
        await stream.send(t)


async def inbox(redis: aioredis.Redis) -> list[InboxMessage]:
    entries = await redis.xrange(INBOX) or []
    return [message_from_fields(InboxMessage, fields or {}) for _id, fields in entries]


async def pending(redis: aioredis.Redis) -> int:
    summary = await redis.xpending(LLM_TASKS_STREAM, LLM_GROUP)
    return int(summary["pending"])


async def test_tasks_are_answered_in_the_inbox(aredis: aioredis.Redis, redis_url: str) -> None:
    await queue(
        aredis,
        task("c", kind="check"),
        task("r0"),
        task("r1", call_index=1),
        task("x", call_index=9),
    )
    handler = await build_handler(aredis, settings(redis_url))
    consumer = Consumer(aredis, LLM_TASKS_STREAM, LLM_GROUP, "test-worker")
    handled = await serve(consumer, LLMTask, handler, burst=True, concurrency=4)
    assert handled == 4
    assert await pending(aredis) == 0
    now = datetime.now(UTC)
    events = {m.causation_id: m.to_event(now) for m in await inbox(aredis)}
    checked, first, second, failed = events["c"], events["r0"], events["r1"], events["x"]
    assert isinstance(checked, ModelChecked)
    assert (checked.ok, checked.backend) == (True, "scripted")
    assert isinstance(first, LLMResponded)
    assert first.message.content == "note for cycle 4"
    assert first.model == "scripted"
    assert isinstance(second, LLMResponded)
    assert second.message.tool_calls[0].name == "read"
    assert isinstance(failed, LLMFailed)
    assert "script exhausted at call 9" in failed.error
    assert failed.retryable is False


async def test_ack_only_after_the_answer_is_in_the_inbox(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    await queue(aredis, task("r0"))
    handler = await build_handler(aredis, settings(redis_url))
    seen: list[tuple[int, int]] = []

    async def handle(t: LLMTask) -> None:
        await handler(t)
        seen.append((len(await inbox(aredis)), await pending(aredis)))

    consumer = Consumer(aredis, LLM_TASKS_STREAM, LLM_GROUP, "test-worker")
    await serve(consumer, LLMTask, handle, burst=True)
    assert seen == [(1, 1)]
    assert await pending(aredis) == 0


async def test_malformed_task_goes_to_dead_letters(aredis: aioredis.Redis, redis_url: str) -> None:
    await aredis.xadd(LLM_TASKS_STREAM, {"msg": b'{"kind": "chat"}'})
    await aredis.xadd(LLM_TASKS_STREAM, {"other": b"x"})
    consumer = Consumer(aredis, LLM_TASKS_STREAM, LLM_GROUP, "test-worker")
    handled = await serve(
        consumer, LLMTask, await build_handler(aredis, settings(redis_url)), burst=True
    )
    assert handled == 0
    dead = await aredis.xrange(DEAD_LETTER_STREAM) or []
    assert len(dead) == 2
    assert all(b"cannot decode" in (fields or {})[b"reason"] for _id, fields in dead)
    assert await pending(aredis) == 0
    assert await inbox(aredis) == []


class ExplodingBackend:
    name = "scripted"

    async def check(self, task: LLMTask) -> CheckOutcome:
        raise RuntimeError("check exploded")

    async def chat(self, task: LLMTask) -> ChatOutcome:
        raise RuntimeError("chat exploded")

    async def aclose(self) -> None:
        return None


async def test_unexpected_errors_become_failure_answers(aredis: aioredis.Redis) -> None:
    tasks = TaskStream(aredis, LLM_TASKS_STREAM)
    await tasks.send(task("r0"))
    await tasks.send(task("c", kind="check"))
    handler = LLMTaskHandler(
        {"scripted": ExplodingBackend()},  # type: ignore[dict-item]
        Inbox(aredis, 1),
    )
    consumer = Consumer(aredis, LLM_TASKS_STREAM, LLM_GROUP, "test-worker")
    assert await serve(consumer, LLMTask, handler, burst=True) == 2
    now = datetime.now(UTC)
    events = {m.causation_id: m.to_event(now) for m in await inbox(aredis)}
    chat, check = events["r0"], events["c"]
    assert isinstance(chat, LLMFailed)
    assert "chat exploded" in chat.error
    assert isinstance(check, ModelChecked)
    assert not check.ok
    assert "check exploded" in check.detail
    assert await pending(aredis) == 0


async def test_main_run_in_burst_mode(aredis: aioredis.Redis, redis_url: str) -> None:
    chat, check = task("r0"), task("c", kind="check")
    for sent in (chat, check):
        await ask_for(aredis, sent.run_id, sent)
        await llm_task_stream(aredis, sent).send(sent)  # a chat to its route, a check to tasks:llm
    assert await run(settings(redis_url), burst=True) == 2
    assert await aredis.xlen(LLM_TASKS_STREAM) == 1
    assert sorted(m.kind for m in await inbox(aredis)) == ["LLMResponded", "ModelChecked"]
    assert await aredis.hget(SERVICES_HEARTBEAT, "llm-worker:test-worker") is not None


async def test_a_task_its_run_no_longer_waits_on_costs_no_call(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """A cancelled run's queued call, or the first copy of a call sent again: dropped
    (acked) without calling the model."""
    cancelled = task("r0")
    await queue(aredis, cancelled)
    await ask_for(aredis, cancelled.run_id, task("r0", call_index=1))  # the run moved on
    handler = await build_handler(aredis, settings(redis_url))
    consumer = Consumer(aredis, LLM_TASKS_STREAM, LLM_GROUP, "test-worker")
    assert await serve(consumer, LLMTask, handler, burst=True) == 1
    assert await inbox(aredis) == []
    assert await pending(aredis) == 0


async def test_a_runs_known_history_is_validated_once_and_the_gate_still_holds(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Issue 20: the chat loop decodes a run's calls with the history it validated
    before (``wire.task_history``); each call is still answered only if its bytes are
    the copy the run's log asked for."""
    config = settings(redis_url)
    scheduler = build_scheduler(aredis, await build_handler(aredis, config), config)
    history = [
        ChatMessage(role="user" if i % 2 else "assistant", content=f"message {i} \u00e9")
        for i in range(task_history.MIN_MESSAGES + 8)
    ]

    def call(step: int, **changes: Any) -> LLMTask:
        messages = (ChatMessage(role="system", content="free"), *history[: -8 + step])
        update = {"run_id": "run-long", "messages": messages, **changes}  # one run's history
        return task(f"s{step}").model_copy(update=update)

    async def serve_one(sent: LLMTask, recorded: LLMTask) -> None:
        await ask_for(aredis, sent.run_id, recorded)
        await llm_task_stream(aredis, sent).send(sent)
        started = scheduler.started
        assert await scheduler.run(asyncio.Event(), burst=True) == started + 1

    for step in range(3):
        await serve_one(call(step), call(step))
    assert [m.causation_id for m in await inbox(aredis)] == ["s0", "s1", "s2"]
    assert scheduler.decoder.reused == 2
    # A copy the log did not ask for (it records the second send), with the known history.
    await serve_one(call(3), call(3, send=2))
    assert scheduler.decoder.reused == 3
    assert [m.causation_id for m in await inbox(aredis)] == ["s0", "s1", "s2"]
