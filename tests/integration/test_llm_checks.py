"""Model checks against a host that never answers: real Redis, the real orchestrator
and LLM worker, the real ``ollama`` client, real sockets. A silent host must cost
its own runs a short, clearly named failure at their deadline, and nobody else a
wait."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.catalog.run import ModelChecked, RunFailed
from contreact_events.names import INBOX_GROUP, LLM_GROUP, LLM_TASKS_STREAM
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.backends.check_slots import CheckSlots, CheckTimes
from contreact_llm.backends.ollama import OllamaBackend
from contreact_llm.backends.openai import OpenAIBackend
from contreact_llm.main import run
from contreact_llm.retry import RetryPolicy
from contreact_llm.settings import LLMWorkerSettings
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.fake_ollama import running_fake_ollama
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import llm_tasks, owning_orchestrator
from tests.support.silent_host import silent_host
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

CHECK_S = 3.0
"""The runs' ``deadlines.check_s``: short, so the test is."""
CHECK_HANG_GUARD_S = 120.0
"""How long a check may take before the test calls it a hang: only a guard (minutes on a
loaded machine are still no hang); what the test checks is which timeout ended it."""
MODEL = "llama3.2"
SILENT_RUNS = [f"run-silent-{i}" for i in range(4)]
GOOD_RUN = "run-good"


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


async def submit(redis: aioredis.Redis, run_id: str, host: str) -> None:
    config = make_config(
        run_id=run_id,
        backend="ollama",
        model_name=MODEL,
        script=None,
        ollama_client_config={"host": host},
        deadlines={"check_s": CHECK_S, "retries": 0},
    )
    await TaskStream(redis, INBOX).send(
        InboxMessage(
            run_id=run_id, kind="RunRequested", data={"config": config.model_dump(mode="json")}
        )
    )


async def drain(redis: aioredis.Redis, orchestrator: Orchestrator) -> int:
    settings = ConsumerSettings(block_ms=50, reclaim_idle_ms=50, reclaim_every_s=0.0)
    consumer = Consumer(redis, INBOX, INBOX_GROUP, "orch", settings)
    return await serve(consumer, InboxMessage, orchestrator.handle, burst=True)


async def checks_answered(redis: aioredis.Redis) -> dict[str, ModelChecked]:
    """The ModelChecked answers in the inbox, by run."""
    now = datetime.now(UTC)
    answered: dict[str, ModelChecked] = {}
    for _id, fields in await redis.xrange(INBOX) or []:
        message = message_from_fields(InboxMessage, fields or {})
        if message.kind == "ModelChecked":
            event = message.to_event(now)
            assert isinstance(event, ModelChecked)
            answered[message.run_id] = event
    return answered


async def checks_taken(redis: aioredis.Redis) -> set[str]:
    """The runs whose check task a worker took and has not acked (acks follow the
    answer, batched: an answered check may still be there a moment)."""
    held = await redis.xpending_range(LLM_TASKS_STREAM, LLM_GROUP, "-", "+", 100)
    ids = {entry["message_id"] for entry in held}
    taken = set()
    for entry_id, fields in await redis.xrange(LLM_TASKS_STREAM):
        if entry_id in ids:
            taken.add(message_from_fields(LLMTask, fields or {}).run_id)
    return taken


async def test_a_silent_host_holds_up_no_other_hosts_check_and_fails_at_the_deadline(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    with silent_host() as silent, running_fake_ollama([f"{MODEL}:latest"]) as good:
        orchestrator = await owning_orchestrator(aredis, tmp_path)
        for run_id in SILENT_RUNS:  # sent first: they reach the worker first
            await submit(aredis, run_id, silent.url)
        await submit(aredis, GOOD_RUN, good.host)
        await drain(aredis, orchestrator)
        deadlines: dict[str, datetime] = {}
        for task in await llm_tasks(aredis):
            assert task.kind == "check" and task.deadline is not None
            deadlines[task.run_id] = task.deadline
        assert set(deadlines) == {*SILENT_RUNS, GOOD_RUN}

        settings = LLMWorkerSettings(
            redis_url=redis_url, consumer_name="checker", block_ms=50, poll_s=0.2
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(run(settings, stop=stop))
        seen_at: dict[str, datetime] = {}
        taken_when_good: set[str] | None = None
        try:
            latest = max(deadlines.values()).timestamp() + 2.0
            while len(seen_at) < len(deadlines) and time.time() < latest:
                for run_id in await checks_answered(aredis):
                    seen_at.setdefault(run_id, datetime.now(UTC))
                    if run_id == GOOD_RUN and taken_when_good is None:
                        taken_when_good = await checks_taken(aredis)
                        silent_answered_first = set(seen_at) - {GOOD_RUN}
                await asyncio.sleep(0.02)
        finally:
            stop.set()
            # (the old worker waits out its calls: not this test's wait)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(worker, 5.0)
        answers = await checks_answered(aredis)

        # The good host's check was answered at once, while the silent host's four
        # were still in progress (taken, not answered).
        assert GOOD_RUN in seen_at, f"the good host's check got no answer; got {sorted(answers)}"
        assert answers[GOOD_RUN].ok, answers[GOOD_RUN].detail
        assert not silent_answered_first
        assert taken_when_good is not None and set(SILENT_RUNS) <= taken_when_good
        assert seen_at[GOOD_RUN] < min(deadlines[r] for r in SILENT_RUNS)
        assert silent.accepted == len(SILENT_RUNS)  # all four asked at once, not in turn

        # The silent host's checks failed at their deadline (just before it: the
        # answer, not the deadline's expiry, reaches the run), naming the host.
        for run_id in SILENT_RUNS:
            answer = answers.get(run_id)
            assert answer is not None, f"{run_id}: no answer by its deadline"
            assert not answer.ok
            said = re.search(
                rf"^Ollama at {silent.url} did not answer the model check within "
                r"([\d.]+) s: ",
                answer.detail,
            )
            assert said is not None, answer.detail
            assert CHECK_S - 1.5 <= float(said.group(1)) <= CHECK_S  # the time it had
            assert "ollama serve" in answer.detail and "ollama_client_config.host" in answer.detail
            early = (deadlines[run_id] - seen_at[run_id]).total_seconds()
            assert 0 <= early <= 1.5, f"{run_id} answered {early:.2f} s before its deadline"

        # What the runs record: the silent ones failed with that error, the good one runs.
        await drain(aredis, orchestrator)
        for run_id in SILENT_RUNS:
            last = (await RunLog(aredis).events(run_id))[-1]
            assert isinstance(last, RunFailed)
            assert last.reason == answers[run_id].detail
        started = [e.type for e in await RunLog(aredis).events(GOOD_RUN)]
        assert "RunStarted" in started


async def test_a_check_gives_up_at_its_own_short_timeout() -> None:
    """Without a deadline (or before it) the check's own timeout bounds it: a small
    request, not a long generation's ``timeout_s``."""
    checks = CheckSlots(CheckTimes(timeout_s=0.5, connect_timeout_s=0.5))
    backend = OllamaBackend(RetryPolicy(), checks)
    with silent_host() as silent:
        task = LLMTask(
            kind="check",
            task_id="run-1/check",
            run_id="run-1",
            backend="ollama",
            model=MODEL,
            host=silent.url,
            timeout_s=600.0,
        )
        try:
            # A hang guard, generous under load: the task's own 600 s would pass it by
            # far, the check's 0.5 s never does (the detail below names which one hit).
            outcome = await asyncio.wait_for(backend.check(task), CHECK_HANG_GUARD_S)
        finally:
            await backend.aclose()
    assert not outcome.ok
    assert outcome.detail.startswith(
        f"Ollama at {silent.url} did not answer the model check within 0.5 s: "
    )


async def test_an_openai_compatible_check_gives_up_too() -> None:
    checks = CheckSlots(CheckTimes(timeout_s=0.5, connect_timeout_s=0.5))
    backend = OpenAIBackend(RetryPolicy(), environ={}, checks=checks)
    with silent_host() as silent:
        base_url = f"{silent.url}/v1"
        task = LLMTask(
            kind="check",
            task_id="run-1/check",
            run_id="run-1",
            backend="openai",
            model="gpt-x",
            host=base_url,
            timeout_s=600.0,
        )
        try:
            # A hang guard, generous under load: the task's own 600 s would pass it by
            # far, the check's 0.5 s never does (the detail below names which one hit).
            outcome = await asyncio.wait_for(backend.check(task), CHECK_HANG_GUARD_S)
        finally:
            await backend.aclose()
    assert not outcome.ok
    assert outcome.detail == (
        f"the server at {base_url} did not answer the model check within 0.5 s: "
        "is the server running, and is openai_client_config.base_url the right URL?"
    )
