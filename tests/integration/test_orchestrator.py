"""The orchestrator's shell against a real Redis: outbox order, idempotency, crash
recovery, dead letters, digests. Workers are played by the test."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.core.decide import decide
from contreact_events.core.fold import fold_all
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    INBOX_GROUP,
    RUNS_INDEX,
    run_digest_key,
    run_meta_key,
    shard_lease_key,
)
from contreact_events.wire.tasks import DIGEST_REQUEST, InboxMessage, LLMTask
from contreact_orchestrator.leases import ShardLeases
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import llm_tasks, owning_orchestrator
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

FAST = ConsumerSettings(block_ms=50, reclaim_idle_ms=50, reclaim_every_s=0.0)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


async def drain(redis: aioredis.Redis, orchestrator: Orchestrator) -> int:
    consumer = Consumer(redis, INBOX, INBOX_GROUP, "orch", FAST)
    return await serve(consumer, InboxMessage, orchestrator.handle, burst=True)


async def submit(redis: aioredis.Redis, **overrides: object) -> None:
    config = make_config(**overrides)
    await TaskStream(redis, INBOX).send(
        InboxMessage(
            run_id=config.run_id,
            kind="RunRequested",
            data={"config": config.model_dump(mode="json")},
        )
    )


async def answer(redis: aioredis.Redis, task: LLMTask, **data: object) -> None:
    kind = "ModelChecked" if task.kind == "check" else "LLMResponded"
    await TaskStream(redis, INBOX).send(
        InboxMessage(run_id=task.run_id, kind=kind, causation_id=task.task_id, data=data)
    )


async def test_a_request_is_logged_indexed_and_asks_for_a_model_check(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path, version="9.9.9")
    await submit(aredis, system_prompt="")
    assert await drain(aredis, orchestrator) == 1
    (event,) = await RunLog(aredis).events("run-1")
    assert event.type == "RunRequested" and event.orchestrator_version == "9.9.9"
    assert "autonomous, task-free agent" in event.config.system_prompt  # the paper's prompt
    (task,) = await llm_tasks(aredis)
    assert (task.kind, task.task_id) == ("check", "run-1/check")
    assert await aredis.zrange(RUNS_INDEX, 0, -1) == [b"run-1"]
    assert (await aredis.hgetall(run_meta_key("run-1")))[b"status"] == b"checking"


async def test_duplicated_results_change_nothing(aredis: aioredis.Redis, tmp_path: Path) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    await submit(aredis)
    await drain(aredis, orchestrator)
    (check,) = await llm_tasks(aredis)
    for _ in range(3):  # a redelivered result, twice over
        await answer(aredis, check, ok=True, backend="scripted")
    await drain(aredis, orchestrator)
    events = await RunLog(aredis).events("run-1")
    assert [e.type for e in events] == [
        "RunRequested",
        "ModelChecked",
        "RunStarted",
        "CycleStarted",
        "LLMRequested",
    ]
    assert [t.kind for t in await llm_tasks(aredis)] == ["check", "chat"]


async def test_after_a_crash_between_append_and_send_the_task_is_sent_again(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    await submit(aredis)
    await drain(aredis, orchestrator)
    (check,) = await llm_tasks(aredis)
    # What the dying orchestrator managed: the decided events are in the log,
    # the chat task they call for was never sent.
    state = fold_all(await RunLog(aredis).events("run-1"))
    result = InboxMessage(
        run_id="run-1",
        kind="ModelChecked",
        causation_id=check.task_id,
        data={"ok": True, "backend": "scripted"},
    )
    from datetime import UTC, datetime

    decision = decide(state, result.to_event(datetime.now(UTC)))
    await RunLog(aredis).append("run-1", decision.events)
    assert [t.kind for t in await llm_tasks(aredis)] == ["check"]

    await aredis.delete(shard_lease_key(0))  # the dead owner's lease ran out
    restarted = Orchestrator(aredis, tmp_path, "1", Inbox(aredis, 1))
    lease = await ShardLeases(aredis, "restarted", 60).acquire(0)
    assert lease is not None and lease.token == 2
    assert await restarted.take_shard(lease) == 1
    tasks = await llm_tasks(aredis)
    assert [t.kind for t in tasks] == ["check", "chat"]
    assert tasks[-1] == decision.tasks[0]


async def test_a_message_that_cannot_become_an_event_is_dead_lettered(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    inbox = Inbox(aredis, 1)
    await inbox.send(InboxMessage(run_id="run-1", kind="RunRequested", data={"config": 7}))
    await inbox.send(InboxMessage(run_id="run-1", kind="Teleport"))
    await submit(aredis)
    await drain(aredis, orchestrator)
    letters = entries(await aredis.xrange(DEAD_LETTER_STREAM))
    assert len(letters) == 2
    assert all(b"cannot process" in fields[b"reason"] for _, fields in letters)
    assert [e.type for e in await RunLog(aredis).events("run-1")] == ["RunRequested"]


async def test_a_finished_run_is_archived_with_its_final_digest(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    await submit(aredis, cycle_count=1)
    await drain(aredis, orchestrator)
    (check,) = await llm_tasks(aredis)
    await answer(aredis, check, ok=True, backend="scripted")
    await drain(aredis, orchestrator)
    chat = (await llm_tasks(aredis))[-1]
    await answer(aredis, chat, message={"content": "the only reflection"})
    await drain(aredis, orchestrator)
    events = await RunLog(aredis).events("run-1")
    assert events[-1].type == "RunCompleted"
    archived = (tmp_path / "run-1.events.jsonl").read_text().splitlines()
    assert len(archived) == len(events)
    meta = await aredis.hgetall(run_meta_key("run-1"))
    assert meta[b"status"] == b"completed"
    assert meta[b"digest"].decode() == fold_all(events).digest()


async def test_the_digest_of_the_held_state_is_given_on_request(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    orchestrator = await owning_orchestrator(aredis, tmp_path)
    await submit(aredis)
    await drain(aredis, orchestrator)
    await Inbox(aredis, 1).send(InboxMessage(run_id="run-1", kind=DIGEST_REQUEST))
    await drain(aredis, orchestrator)
    answer_ = await aredis.hgetall(run_digest_key("run-1"))
    state = fold_all(await RunLog(aredis).events("run-1"))
    assert answer_[b"digest"].decode() == state.digest()
    assert answer_[b"held"] == b"memory" and int(answer_[b"seq"]) == state.seq
