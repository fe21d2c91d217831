"""The orchestrator's guarantees under faults, each broken on purpose against a real
Redis: a stale owner is fenced out; a write whose answer is lost is not appended
twice; a task that could not be sent, a poison result and an unreadable log do not
stop anything but their own run; overdue waits come back as failures; a finished
run's log leaves Redis and is read from the archive."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import redis.asyncio as aioredis

from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve
from contreact_events.core.fold import fold_all
from contreact_events.history.replay import replay_check
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    EMBED_TASKS_STREAM,
    INBOX_GROUP,
    LLM_GROUP,
    run_log_key,
    run_meta_key,
    shard_lease_key,
)
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import EmbedTask, InboxMessage, LLMTask, task_digest
from contreact_orchestrator.exceptions import LeaseLost
from contreact_orchestrator.leases import ShardLeases
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.cutting_proxy import CuttingProxy
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import chat_stream, llm_tasks, owning_orchestrator
from tests.support.sim import make_config, toy_embedding

pytestmark = pytest.mark.redis

FAST = ConsumerSettings(block_ms=50, reclaim_idle_ms=200, reclaim_every_s=0.0)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


async def drain(redis: aioredis.Redis, orchestrator: Orchestrator, name: str = "orch") -> int:
    consumer = Consumer(redis, INBOX, INBOX_GROUP, name, FAST)
    return await serve(consumer, InboxMessage, orchestrator.handle, burst=True)


async def submit(redis: aioredis.Redis, run_id: str = "run-1", **overrides: Any) -> None:
    config = make_config(run_id=run_id, **overrides)
    await Inbox(redis, 1).send(
        InboxMessage(run_id=run_id, kind="RunRequested", data={"config": config.model_dump()})
    )


async def tasks_in(redis: aioredis.Redis, stream: str, model: type) -> list:  # type: ignore[type-arg]
    return [message_from_fields(model, f) for _, f in entries(await redis.xrange(stream))]


async def answer(redis: aioredis.Redis, task: LLMTask | EmbedTask, kind: str, **data: object):
    message = InboxMessage(run_id=task.run_id, kind=kind, causation_id=task.task_id, data=data)
    await Inbox(redis, 1).send(message)
    return message


async def started_run(redis: aioredis.Redis, orchestrator: Orchestrator, **overrides: Any):
    """A run past its model check, waiting for its first LLM call."""
    await submit(redis, **overrides)
    await drain(redis, orchestrator)
    (check,) = await llm_tasks(redis)
    await answer(redis, check, "ModelChecked", ok=True, backend="scripted")
    await drain(redis, orchestrator)
    return (await llm_tasks(redis))[-1]


async def test_a_stale_owner_can_never_write_again(aredis: aioredis.Redis, tmp_path: Path) -> None:
    stale = await owning_orchestrator(aredis, tmp_path, owner="A")
    await submit(aredis)
    await drain(aredis, stale)
    (check,) = await llm_tasks(aredis)

    await aredis.delete(shard_lease_key(0))  # A paused past its lease; B took the shard
    successor = await owning_orchestrator(aredis, tmp_path, owner="B")
    result = await answer(aredis, check, "ModelChecked", ok=True, backend="scripted")
    with pytest.raises(LeaseLost, match="newer owner"):
        await stale.handle(result)  # A still believes it owns the shard: refused
    assert [e.type for e in await RunLog(aredis).events("run-1")] == ["RunRequested"]
    assert not stale.owns(0)

    await successor.handle(result)
    events = await RunLog(aredis).events("run-1")
    assert [e.type for e in events][:3] == ["RunRequested", "ModelChecked", "RunStarted"]
    assert replay_check(events).ok


async def test_a_write_whose_answer_was_lost_is_not_appended_twice(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Redis ran the append (and the task send), the reply never came back: the
    orchestrator refolds, finds its input already decided, and sends the task again."""
    target = urlparse(redis_url)
    proxy = CuttingProxy(target.hostname or "127.0.0.1", target.port or 6379)
    port = await proxy.start()
    via_proxy = aioredis.Redis.from_url(f"redis://127.0.0.1:{port}{target.path or '/0'}")
    try:
        orchestrator = await owning_orchestrator(via_proxy, tmp_path)
        await submit(aredis)
        await drain(aredis, orchestrator)
        (check,) = await llm_tasks(aredis)
        result = await answer(aredis, check, "ModelChecked", ok=True, backend="scripted")
        proxy.cut_reply_after(b"POSITION")  # text of the append script
        await asyncio.wait_for(orchestrator.handle(result), 30)
        assert proxy.cuts == 1
    finally:
        await via_proxy.aclose()
        await proxy.close()
    events = await RunLog(aredis).events("run-1")
    types = [e.type for e in events]
    assert types == ["RunRequested", "ModelChecked", "RunStarted", "CycleStarted", "LLMRequested"]
    state = fold_all(events)
    chats = [t for t in await llm_tasks(aredis) if t.kind == "chat"]
    assert chats and all(t.task_id == state.pending_task_id for t in chats)  # sent (again)


async def test_a_task_that_could_not_be_sent_comes_back_at_its_deadline(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """The append succeeds but the task's XADD is refused: the run does not wait
    forever; its deadline reports the failure and the task is sent again."""
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    await submit(aredis, deadlines={"check_s": 1, "retries": 3})
    await drain(aredis, orchestrator)
    (check,) = await llm_tasks(aredis)
    chats = chat_stream(check)
    await aredis.set(chats, "not a stream")  # the chat's XADD fails: WRONGTYPE
    await answer(aredis, check, "ModelChecked", ok=True, backend="scripted")
    await drain(aredis, orchestrator)
    state = fold_all(await RunLog(aredis).events("run-1"))
    assert state.phase == "awaiting_llm"  # logged, while the chat task went nowhere
    await aredis.delete(chats)
    later = datetime.now(UTC) + timedelta(hours=2)
    assert await orchestrator.expire_overdue(later) == 1
    assert await orchestrator.expire_overdue(later) == 0  # reported once
    await drain(aredis, orchestrator)
    events = await RunLog(aredis).events("run-1")
    assert [e.type for e in events][-2:] == ["TaskFailed", "TaskRetried"]
    *_, chat = await llm_tasks(aredis)  # (and maybe send 1 again)
    assert (chat.kind, chat.send, chat.task_id) == ("chat", 2, state.pending_task_id)
    pending = await RunLog(aredis).pending_task("run-1")
    assert pending is not None and pending.digest == task_digest(chat)  # workers take send 2


async def test_a_poison_result_fails_its_task_and_the_run_goes_on(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """A vector of the wrong size: the core refuses it; the embedding is retried, then
    the cycle ends without an assessment; the orchestrator carries on."""
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    chat = await started_run(
        aredis,
        orchestrator,
        cycle_count=3,
        diversity={"enabled": True},
        deadlines={"retries": 1},
    )

    async def reflect(call: LLMTask, text: str) -> Any:
        await answer(aredis, call, "LLMResponded", message={"content": text})
        await drain(aredis, orchestrator)
        return (await tasks_in(aredis, EMBED_TASKS_STREAM, EmbedTask))[-1]

    async def embedded(task: EmbedTask, vector: list[float]) -> None:
        await answer(
            aredis, task, "ReflectionEmbedded", task_id=task.task_id, cycle=task.cycle,
            vector=vector, model="toy",
        )  # fmt: skip
        await drain(aredis, orchestrator)

    first = await reflect(chat, "a first reflection")
    await embedded(first, toy_embedding(first.text))
    chat2 = (await llm_tasks(aredis))[-1]
    second = await reflect(chat2, "a second reflection")
    await embedded(second, [0.5, 0.5, 0.5])  # poison: 3 dimensions against 16
    retried = (await tasks_in(aredis, EMBED_TASKS_STREAM, EmbedTask))[-1]
    assert (retried.task_id, retried.send) == (second.task_id, 2)
    await embedded(retried, [1.0])  # poison again: the budget is spent
    state = fold_all(await RunLog(aredis).events("run-1"))
    assert state.status == "running" and state.cycle_number == 3
    types = [e.type for e in await RunLog(aredis).events("run-1")]
    assert types.count("TaskFailed") == 2 and "EmbeddingFailed" in types
    letters = entries(await aredis.xrange(DEAD_LETTER_STREAM))
    assert len(letters) == 2 and all(b"rejected" in f[b"reason"] for _, f in letters)
    assert replay_check(await RunLog(aredis).events("run-1")).ok


async def test_an_unreadable_log_quarantines_its_run_and_the_others_go_on(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    first = await owning_orchestrator(aredis, tmp_path, owner="first")
    for run_id in ("good", "corrupt", "future"):
        await submit(aredis, run_id=run_id)
    await drain(aredis, first)
    await aredis.xadd(run_log_key("corrupt"), {"type": "RunStarted", "event": "{oops"})
    raw = (await RunLog(aredis).read("future"))[0][1].model_dump(mode="json")
    raw.update(event_id="x", schema_version=99)
    await aredis.xadd(run_log_key("future"), {"type": "RunRequested", "event": str(raw)})

    await aredis.delete(shard_lease_key(0))  # the orchestrator restarts
    restarted = await owning_orchestrator(aredis, tmp_path, owner="restarted")
    assert restarted.held_runs() == ["good"]
    corrupt = await aredis.hgetall(run_meta_key("corrupt"))
    assert corrupt[b"status"] == b"quarantined"
    assert b"not valid JSON" in corrupt[b"failure_reason"]
    assert b"upgrade" not in corrupt[b"failure_reason"]
    assert (await aredis.hgetall(run_meta_key("future")))[b"status"] == b"quarantined"

    checks = {t.run_id: t for t in await llm_tasks(aredis)}
    for run_id in ("good", "corrupt"):
        await answer(aredis, checks[run_id], "ModelChecked", ok=True, backend="scripted")
    await drain(aredis, restarted)
    good = fold_all(await RunLog(aredis).events("good"))
    assert good.phase == "awaiting_llm"
    assert (await aredis.hgetall(run_meta_key("corrupt")))[b"status"] == b"quarantined"


async def test_a_finished_runs_log_leaves_redis_and_the_archive_serves_it(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path, log_retention_s=1)
    chat = await started_run(aredis, orchestrator, cycle_count=1)
    result = await answer(aredis, chat, "LLMResponded", message={"content": "the end"})
    await drain(aredis, orchestrator)
    events = await RunLog(aredis).events("run-1")
    assert events[-1].type == "RunCompleted"
    assert 0 < await aredis.ttl(run_log_key("run-1")) <= 1
    await asyncio.sleep(1.6)
    assert not await RunLog(aredis).exists("run-1")
    assert await load_events(aredis, tmp_path, "run-1") == events  # from the archive
    assert (await aredis.hgetall(run_meta_key("run-1")))[b"status"] == b"completed"
    await Inbox(aredis, 1).send(result)  # a late duplicate finds the archive, not a new run
    await drain(aredis, orchestrator)
    assert not await RunLog(aredis).exists("run-1")


async def test_a_dead_lettered_task_comes_back_to_its_run(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """A worker that dies on a task at every delivery: the task is dead-lettered and
    the run hears of it at once (not at its deadline)."""
    from contreact_bus.streams.inbox import tell_run_of_dead_letter

    orchestrator = await owning_orchestrator(aredis, tmp_path)
    chat = await started_run(aredis, orchestrator, deadlines={"retries": 0})
    settings = ConsumerSettings(
        block_ms=20, reclaim_idle_ms=30, reclaim_every_s=0, max_deliveries=2
    )
    hook = tell_run_of_dead_letter(Inbox(aredis, 1))

    async def crash(task: LLMTask) -> None:
        raise RuntimeError("the worker falls over")

    stream = chat_stream(chat)
    worker = Consumer(aredis, stream, LLM_GROUP, "w", settings, on_dead_letter=hook)
    for _ in range(6):
        await serve(worker, LLMTask, crash, burst=True)
        await asyncio.sleep(0.05)
    await drain(aredis, orchestrator)
    state = fold_all(await RunLog(aredis).events("run-1"))
    assert state.status == "failed"
    assert f"the LLM call {chat.task_id} failed 1 time(s)" in (state.failure_reason or "")
    assert "dead_lettered: delivered 3 times" in (state.failure_reason or "")


async def test_orchestrator_without_the_shard_refuses_to_act(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = Orchestrator(aredis, tmp_path, "1", Inbox(aredis, 1))
    await submit(aredis)
    consumer = Consumer(aredis, INBOX, INBOX_GROUP, "orch", FAST)
    assert await serve(consumer, InboxMessage, orchestrator.handle, burst=True) == 0
    assert not await RunLog(aredis).exists("run-1")
    assert (await aredis.xpending(INBOX, INBOX_GROUP))["pending"] == 1  # left for the owner
    owner = await owning_orchestrator(aredis, tmp_path)
    await asyncio.sleep(0.25)  # the entry's claim goes stale (nobody holds it)
    assert await drain(aredis, owner, name="owner") == 1
    assert await RunLog(aredis).exists("run-1")


async def test_leases_fence_tokens_grow_and_only_the_owner_renews(
    aredis: aioredis.Redis,
) -> None:
    a, b = ShardLeases(aredis, "a", 0.3), ShardLeases(aredis, "b", 0.3)
    first = await a.acquire(0)
    assert first is not None and first.token == 1
    assert await b.acquire(0) is None
    assert await a.renew([first]) == []
    await asyncio.sleep(0.4)  # a paused: its lease lapsed
    second = await b.acquire(0)
    assert second is not None and second.token == 2
    assert await a.renew([first]) == [first] and first.lost and not first.valid()
    await b.release([0])
    third = await a.acquire(0)
    assert third is not None and third.token == 3
