"""Assessments when things break: an rq worker killed in the middle of a job leaves a
job that rq finds abandoned and retries, and the rating is recorded once; a job whose
record was written before its worker died records nothing twice; and an evaluation
never evicts a model that a live run still needs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from rq.job import Job
from rq.serializers import JSONSerializer

from contreact_assessor.records import failed_event
from contreact_bus import assessments
from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.assessments.evaluators import Rating, evaluator_of_run
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.names import ACTIVE_RUNS, assessment_gate_key, run_assessments_key
from tests.support.assessing import (
    a_live_runs_call,
    archive_runs,
    assessor_env,
    clean_abandoned,
    finished_run,
    kill_group,
    llm_worker,
    rq_queue,
    start_assessor,
    wait_process,
)
from tests.support.inbox import INBOX, use_one_shard
from tests.support.ollama_host import running_ollama_host

pytestmark = pytest.mark.redis

POLICY = JobPolicy(retries=2, intervals_s=(0,), job_timeout_s=60)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


async def _until(predicate: Callable[[], Awaitable[Any]], what: str, timeout_s: float = 60) -> None:
    for _ in range(int(timeout_s * 20)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_worker_killed_mid_job_leaves_a_job_that_is_retried_and_recorded_once(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    slow = {"replies": [{"content": "Level 5", "latency_ms": 1500}], "repeat": True}
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "", script=slow)])
    env = assessor_env(redis_url, tmp_path)
    with rq_queue(redis_url) as q:
        (placed,) = await enqueue(
            aredis, q, [Wanted("run-1", "pei", evaluator_of_run(state))], policy=POLICY
        )
        async with llm_worker(redis_url):
            doomed = start_assessor(env, log=tmp_path / "doomed.log")
            gate = assessment_gate_key(placed.job_id)
            await _until(lambda: aredis.exists(gate), "the job to send its evaluator call")
            kill_group(doomed)  # the worker and its work horse, mid-call
            job = Job.fetch(placed.job_id, connection=q.connection, serializer=JSONSerializer)
            assert job.get_status() == "started" and job.retries_left == 2
            # rq's cleanup (every worker runs it as maintenance) finds the execution
            # whose heartbeat lapsed; the clock is moved past its TTL instead of waited.
            await asyncio.to_thread(clean_abandoned, redis_url, env, after_s=3600)
            job = Job.fetch(placed.job_id, connection=q.connection, serializer=JSONSerializer)
            assert job.get_status() == "queued" and job.retries_left == 1
            assert await wait_process(start_assessor(env, log=tmp_path / "rq.log")) == 0
        assert job.get_status() == "finished"
    assert await aredis.xlen(run_assessments_key("run-1")) == 1
    (record,) = assessments.read_archive(tmp_path / "runs", "run-1")
    assert isinstance(record, RunAssessed) and record.value == 5 and record.attempts == 2


async def test_a_job_whose_record_was_written_before_its_worker_died_records_nothing_twice(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "Level 5")])
    with rq_queue(redis_url) as q:
        (placed,) = await enqueue(
            aredis, q, [Wanted("run-1", "pei", evaluator_of_run(state))], policy=POLICY
        )
        rating = Rating(
            run_id="run-1",
            instrument="pei",
            repeat=1,
            job_id=placed.job_id,
            evaluator=evaluator_of_run(state),
        )
        earlier = failed_event(rating, "written by the attempt that died", attempts=1)
        key = assessments.RatingKey("pei", "m", 1)
        await assessments.record(aredis, earlier, key)  # ... and the worker died before the archive
        async with llm_worker(redis_url):
            assert await wait_process(start_assessor(assessor_env(redis_url, tmp_path))) == 0
    assert await aredis.xlen(run_assessments_key("run-1")) == 1
    assert assessments.read_archive(tmp_path / "runs", "run-1") == [earlier]


async def test_an_evaluation_does_not_evict_a_model_a_live_run_needs(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    with running_ollama_host(["live", "judge"], max_loaded=1, load_s=0.05) as ollama:
        limits = {ollama.host: {"parallel": 1, "max_loaded_models": 1}}
        live = await a_live_runs_call(aredis, ollama.host)
        evaluation = live.model_copy(
            update={
                "task_id": "job-1/1",
                "run_id": "run-old",
                "model": "judge",
                "reply_to": "job-1",
            }
        )
        async with llm_worker(redis_url, hosts=limits):
            await _until(lambda: aredis.xlen(INBOX), "the live run's call to be answered")
            await evaluator_calls.send_call(aredis, evaluation)
            await asyncio.sleep(1.0)  # the worker looks again every 0.1 s meanwhile
            ended_at = time.monotonic()
            await aredis.srem(ACTIVE_RUNS, "run-live")  # the live run ends: its model may go
            reply = await evaluator_calls.wait_reply(aredis, "job-1", "job-1/1", 30)
        assert reply is not None and reply.kind == "LLMResponded"
        assert [model for _t, model in ollama.loads] == ["live", "judge"]
        (judge_loaded,) = [t for t, model in ollama.loads if model == "judge"]
        assert judge_loaded >= ended_at  # never while the live run could call again


async def test_a_worker_killed_on_the_last_attempt_leaves_a_visible_failure(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    slow = {"replies": [{"content": "Level 5", "latency_ms": 1500}], "repeat": True}
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "", script=slow)])
    env = assessor_env(redis_url, tmp_path)
    last_only = JobPolicy(retries=0, job_timeout_s=60)
    with rq_queue(redis_url) as q:
        (placed,) = await enqueue(
            aredis, q, [Wanted("run-1", "pei", evaluator_of_run(state))], policy=last_only
        )
        async with llm_worker(redis_url):
            doomed = start_assessor(env, log=tmp_path / "doomed.log")
            gate = assessment_gate_key(placed.job_id)
            await _until(lambda: aredis.exists(gate), "the job to send its evaluator call")
            kill_group(doomed)
            await asyncio.to_thread(clean_abandoned, redis_url, env, after_s=3600)
        job = Job.fetch(placed.job_id, connection=q.connection, serializer=JSONSerializer)
        assert job.get_status() == "failed"
    (record,) = assessments.read_archive(tmp_path / "runs", "run-1")
    assert record.type == "AssessmentFailed" and "killed" in record.error
