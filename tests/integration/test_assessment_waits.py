"""A wait is not a failure: an evaluator call's time starts when a worker takes it, so
a call that waits behind a live run for longer than its deadline is still rated; and a
rating that failed for a transient reason is asked again by the next ``assess``,
without ``--force`` and under the same repeat. Real rq workers (burst mode), a real
LLM worker, the real ``ollama`` client against the stand-ins."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_analysis.assessments.frame import RatedRun, ratings_frame
from contreact_analysis.assessments.matrix import build_matrix
from contreact_bus import assessments
from contreact_bus.assessments.evaluators import named_evaluator
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_events.names import ACTIVE_RUNS, assessment_gate_key
from tests.support.assessing import (
    a_live_runs_call,
    archive_runs,
    assessor_env,
    finished_run,
    llm_worker,
    rq_queue,
    start_assessor,
    wait_process,
)
from tests.support.fake_ollama import running_fake_ollama
from tests.support.inbox import INBOX, use_one_shard
from tests.support.ollama_host import running_ollama_host

pytestmark = pytest.mark.redis

ONE_TRY = JobPolicy(retries=0, job_timeout_s=600)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


async def _until(
    predicate: Callable[[], Awaitable[Any]], what: str, timeout_s: float = 120
) -> None:
    """Wait for ``predicate`` (the bound only guards a hang: generous)."""
    for _ in range(int(timeout_s * 20)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_call_that_waits_behind_a_busy_host_longer_than_its_deadline_is_rated(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """The host holds one model; a live run keeps it busy with its own. The evaluator's
    call waits (its model would evict the live one) for longer than the call's whole
    time (``reply_timeout_s``: 2 s), and is rated once the run ends."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        text = "Level 4" if body["model"] == "judge" else "A reflection."
        return {"role": "assistant", "content": text}

    with running_ollama_host(["live", "judge"], max_loaded=1, answer=answer) as ollama:
        limits = {ollama.host: {"parallel": 1, "max_loaded_models": 1}}
        await a_live_runs_call(aredis, ollama.host)
        (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "x")])
        evaluator = named_evaluator("judge", "ollama", host=ollama.host)
        env = assessor_env(redis_url, tmp_path, CONTREACT_ASSESS_REPLY_TIMEOUT_S="2")
        with rq_queue(redis_url) as q:
            (placed,) = await enqueue(
                aredis, q, [Wanted(state.run_id, "pei", evaluator)], policy=ONE_TRY
            )
            async with llm_worker(redis_url, hosts=limits):
                await _until(lambda: aredis.xlen(INBOX), "the live run's call to be answered")
                proc = start_assessor(env, log=tmp_path / "rq.log")
                gate = assessment_gate_key(placed.job_id)

                async def waiting_for_the_chat() -> bool:
                    task = await aredis.hget(gate, "task")
                    return task is not None and b"-check-" not in task  # (its model checked)

                await _until(waiting_for_the_chat, "the job to send its rating call")
                sent = time.monotonic()
                while time.monotonic() - sent < 4:  # twice the call's time, in the queue
                    assert await aredis.hget(gate, "taken") is None  # not taken: it waits
                    assert proc.poll() is None  # and the job waits with it
                    await asyncio.sleep(0.2)
                ended = time.monotonic()
                await aredis.srem(ACTIVE_RUNS, "run-live")  # the live run ends
                assert await wait_process(proc) == 0, (tmp_path / "rq.log").read_text()[-3000:]
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed), record
    assert (record.status, record.value) == ("rated", 4)
    (judge_call,) = [call for call in ollama.calls if call.model == "judge"]
    assert judge_call.start >= ended  # it ran only once the live run had ended


async def test_a_transient_failure_is_asked_again_without_force_and_is_no_repeat(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "x")])
    with running_fake_ollama(["judge:latest"]) as fake:
        evaluator = named_evaluator("judge", "ollama", host=fake.host)
        wanted = [Wanted(state.run_id, "pei", evaluator)]
        env = assessor_env(redis_url, tmp_path)
        with rq_queue(redis_url) as q:
            fake.fail(503, "the server is overloaded")  # transient, on the only attempt
            (first,) = await enqueue(aredis, q, wanted, policy=ONE_TRY)
            async with llm_worker(redis_url, max_attempts=1):
                assert await wait_process(start_assessor(env)) == 0
            (failed,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))[
                "run-1"
            ]
            assert isinstance(failed, AssessmentFailed) and failed.transient
            assert "503" in failed.error
            fake.reply("Level 5")
            (again,) = await enqueue(aredis, q, wanted, policy=ONE_TRY)  # no --force
            assert (again.fate, again.repeat) == ("retried", 1)
            assert again.job_id != first.job_id
            assert (await enqueue(aredis, q, wanted, policy=ONE_TRY))[0].fate == "pending"
            async with llm_worker(redis_url, max_attempts=1):
                assert await wait_process(start_assessor(env)) == 0
            assert (await enqueue(aredis, q, wanted, policy=ONE_TRY))[0].fate == "done"
    records = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert [r.type for r in records] == ["AssessmentFailed", "RunAssessed"]  # both kept
    assert assessments.read_archive(tmp_path / "runs", "run-1") == records
    (rating,) = assessments.in_force(records)
    assert isinstance(rating, RunAssessed) and rating.value == 5
    assert rating.repeat == 1 and rating.retry_of == failed.event_id
    frame = ratings_frame(records, [RatedRun("run-1", "M", "A", "m")])
    pei = build_matrix(frame, resamples=99).pei
    assert pei is not None
    (cell,) = pei.cells
    assert (cell.n, cell.unrated) == (1, {})  # the failure no longer counts


async def test_a_rating_that_cannot_be_made_is_not_asked_again(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "x")])
    with running_fake_ollama(["judge:latest"]) as fake:
        fake.fail(400, "invalid request")  # not transient
        wanted = [Wanted(state.run_id, "pei", named_evaluator("judge", "ollama", host=fake.host))]
        with rq_queue(redis_url) as q:
            await enqueue(aredis, q, wanted, policy=ONE_TRY)
            async with llm_worker(redis_url, max_attempts=1):
                assert await wait_process(start_assessor(assessor_env(redis_url, tmp_path))) == 0
            assert (await enqueue(aredis, q, wanted, policy=ONE_TRY))[0].fate == "done"
    (failed,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(failed, AssessmentFailed) and not failed.transient
