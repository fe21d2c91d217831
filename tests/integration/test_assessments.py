"""Assessments on a real Redis: each rating claimed and recorded once, archived once;
the evaluator call through a real LLM worker to the job that asked; real rq workers
(processes, burst mode) rating runs, enqueueing again adding nothing, a forced rating
a new repeat, and a failing evaluator ending as a visible failure after its retries."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_assessor.questions import evaluator_task
from contreact_assessor.records import failed_event
from contreact_bus import assessments
from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.assessments.evaluators import Rating, evaluator_of_run
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue, in_evaluator_order
from contreact_bus.streams.consumer import Delivery
from contreact_bus.streams.inbox import Inbox, tell_run_of_dead_letter
from contreact_events.catalog import Event
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_events.catalog.chat import ChatMessage
from contreact_events.core.fold import fold_all
from contreact_events.history.evaluation import evaluator_input, verify_assessment
from contreact_events.instruments import load_instrument
from contreact_events.names import run_assessments_key
from contreact_events.wire.codec import message_to_fields
from tests.support.assessing import (
    archive_runs,
    assessor_env,
    finished_run,
    llm_worker,
    rq_queue,
    start_assessor,
    wait_process,
)
from tests.support.inbox import INBOX, use_one_shard

pytestmark = pytest.mark.redis

POLICY = JobPolicy(retries=2, intervals_s=(0,), job_timeout_s=60)


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def rating_of(events: list[Event], job_repeat: int = 1, instrument: str = "pei") -> Rating:
    state = fold_all(events)
    key = assessments.RatingKey(instrument, state.model_name, job_repeat)
    return Rating(
        run_id=state.run_id,
        instrument=instrument,
        repeat=job_repeat,
        job_id=assessments.job_id(state.run_id, key),
        evaluator=evaluator_of_run(state),
    )


async def test_a_rating_is_claimed_once_and_a_forced_one_takes_the_next_repeat(
    aredis: aioredis.Redis,
) -> None:
    first = await assessments.claim(aredis, "run-1", "pei", "m:latest", 1)
    again = await assessments.claim(aredis, "run-1", "pei", "m:latest", 1)
    assert first.claimed and first.repeat == 1
    assert not again.claimed and again.job_id == first.job_id
    forced = [await assessments.claim(aredis, "run-1", "pei", "m:latest", None) for _ in range(2)]
    assert [(f.repeat, f.claimed) for f in forced] == [(2, True), (3, True)]
    other = await assessments.claim(aredis, "run-1", "pei", "other", None)
    assert other.repeat == 1  # repeats count per evaluator
    index = await assessments.index(aredis, "run-1")
    assert len(index) == 4 and all(v.startswith("job:") for v in index.values())


async def test_a_record_is_written_once_and_archived_once(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    events = finished_run("run-1", "m", "Level 4")
    rating = rating_of(events)
    key = assessments.RatingKey("pei", "m", 1)
    failure = failed_event(rating, "no answer", attempts=1)
    first = await assessments.record(aredis, failure, key)
    second = await assessments.record(aredis, failure.model_copy(update={"error": "x"}), key)
    assert first.new and not second.new and second.entry_id == first.entry_id
    assert await aredis.xlen(run_assessments_key("run-1")) == 1
    (stored,) = (await assessments.redis_records(aredis, ["run-1"]))[0]
    assert stored == failure
    assert assessments.append_archive(tmp_path, "run-1", [stored]) == 1
    assert assessments.append_archive(tmp_path, "run-1", [stored]) == 0  # append-only, once
    only_archived = failure.model_copy(update={"event_id": "older", "repeat": 2})
    assert assessments.append_archive(tmp_path, "run-1", [only_archived]) == 1
    read = await assessments.read_assessments(aredis, tmp_path, ["run-1"])
    assert [r.event_id for r in read["run-1"]] == [failure.event_id, "older"]
    from_file = await assessments.read_assessments(None, tmp_path, ["run-1"])
    assert from_file == read


async def test_the_evaluator_call_goes_through_the_llm_worker_to_its_job(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    events = finished_run("run-1", "m", "My level: 6")
    rating = rating_of(events)
    made = evaluator_input(events, load_instrument("pei"))
    stale = evaluator_task(rating, made.messages, f"{rating.job_id}/1", 30)
    await evaluator_calls.send_call(aredis, stale)
    task = evaluator_task(rating, made.messages, f"{rating.job_id}/2", 30)
    await evaluator_calls.send_call(aredis, task)  # the job's gate now names this one
    async with llm_worker(redis_url) as _worker:
        reply = await evaluator_calls.wait_reply(aredis, rating.job_id, task.task_id, 20)
    assert reply is not None and reply.kind == "LLMResponded"
    assert reply.data["message"]["content"] == "My level: 6"
    assert await aredis.xlen(INBOX) == 0  # the run (ended) is told nothing
    assert await aredis.llen(f"assess:{{{rating.job_id}}}:reply") == 0  # the stale copy: no call


async def test_rq_workers_rate_runs_and_enqueueing_again_adds_nothing(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    archive = tmp_path / "runs"
    runs = [
        finished_run("exp-a-A", "model-a", "My level: 3"),
        finished_run("exp-b-A", "model-b", "Level 7. I notice ..."),
    ]
    states = archive_runs(archive, runs)
    evaluators = [evaluator_of_run(s) for s in states]
    wanted = [Wanted(s.run_id, "pei", ev) for s in states for ev in evaluators]
    grouped = [w.evaluator.model for w in in_evaluator_order(wanted)]
    assert grouped == ["model-a", "model-a", "model-b", "model-b"]
    paired = [w.evaluator.model for w in in_evaluator_order(wanted, models_at_once=2)]
    assert paired == ["model-a", "model-b", "model-a", "model-b"]
    with rq_queue(redis_url) as q:
        placed = await enqueue(aredis, q, wanted, policy=POLICY)
        assert [p.fate for p in placed] == ["enqueued"] * 4
        async with llm_worker(redis_url):
            proc = start_assessor(assessor_env(redis_url, tmp_path), log=tmp_path / "rq.log")
            assert await wait_process(proc) == 0, (tmp_path / "rq.log").read_text()[-3000:]
        again = await enqueue(aredis, q, wanted, policy=POLICY)
        assert [p.fate for p in again] == ["done"] * 4
        forced = await enqueue(aredis, q, wanted[:1], policy=POLICY, force=True)
        assert [(p.fate, p.repeat) for p in forced] == [("enqueued", 2)]
    records = await assessments.read_assessments(aredis, archive, [s.run_id for s in states])
    values = {(r.run_id, r.evaluator): r.value for rs in records.values() for r in rs}
    assert values == {
        ("exp-a-A", "model-a"): 3,
        ("exp-a-A", "model-b"): 7,
        ("exp-b-A", "model-a"): 3,
        ("exp-b-A", "model-b"): 7,
    }
    for events, state in zip(runs, states, strict=True):
        for record in records[state.run_id]:
            assert isinstance(record, RunAssessed) and record.status == "rated"
            assert verify_assessment(events, record) is None  # the input rebuilds to its hash
            assert record.run_events == len(events) and record.run_digest == state.digest()
            assert record.options["temperature"] == 0.1 and record.backend == "scripted"
    archived = assessments.read_archive(archive, "exp-a-A")
    assert len(archived) == 2  # every record is in the archive, once


async def test_a_failing_evaluator_ends_as_a_visible_failure_after_its_retries(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    events = finished_run(
        "run-1", "m", "", script={"replies": [{"error": "model crashed", "transient": True}]}
    )
    (state,) = archive_runs(tmp_path / "runs", [events])
    wanted = [Wanted("run-1", "pei", evaluator_of_run(state))]
    with rq_queue(redis_url) as q:
        await enqueue(aredis, q, wanted, policy=POLICY)
        async with llm_worker(redis_url, max_attempts=1):
            proc = start_assessor(assessor_env(redis_url, tmp_path), log=tmp_path / "rq.log")
            assert await wait_process(proc) == 0
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, AssessmentFailed)
    assert record.attempts == 3 and "model crashed" in record.error  # 1 + 2 retries
    assert record.input_sha256 == evaluator_input(events, load_instrument("pei")).input_sha256


async def test_an_unparseable_answer_is_recorded_with_its_raw_text(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    hostile = "<script>alert(1)</script>\x1b[31m I'd rather not say." * 3
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", hostile)])
    with rq_queue(redis_url) as q:
        await enqueue(aredis, q, [Wanted("run-1", "pei", evaluator_of_run(state))], policy=POLICY)
        async with llm_worker(redis_url):
            assert await wait_process(start_assessor(assessor_env(redis_url, tmp_path))) == 0
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed)
    assert record.status in ("unparseable", "refused") and record.value is None
    assert record.raw_answer == hostile


def test_messages_are_the_history_then_the_instrument() -> None:
    events = finished_run("run-1", "m", "Level 2")
    made = evaluator_input(events, load_instrument("pei"))
    task = evaluator_task(rating_of(events), made.messages, "t", None)
    assert task.tools == () and task.reply_to == rating_of(events).job_id
    assert task.messages[-1] == ChatMessage(role="user", content=load_instrument("pei").prompt)
    assert asyncio.iscoroutinefunction(evaluator_calls.wait_reply)


async def test_a_job_waits_past_the_redis_clients_socket_timeout(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """redis-py times a read out after 5 s: the job's wait for a slow answer (a model
    load, a long answer) must not be one read."""
    slow = {"replies": [{"content": "Level 3", "latency_ms": 6500}]}
    events = finished_run("run-1", "m", "", script=slow)
    rating = rating_of(events)
    made = evaluator_input(events, load_instrument("pei"))
    task = evaluator_task(rating, made.messages, f"{rating.job_id}/1", None)
    await evaluator_calls.send_call(aredis, task)
    async with llm_worker(redis_url):
        reply = await evaluator_calls.wait_reply(aredis, rating.job_id, task.task_id, 30)
    assert reply is not None and reply.data["message"]["content"] == "Level 3"


async def test_a_claim_whose_rq_job_was_lost_is_enqueued_again(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """rq's Redis lost its jobs (a separate Redis restarted without persistence, say):
    the claims stay in the platform's record, and enqueueing again puts the jobs back."""
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "Level 4")])
    wanted = [Wanted("run-1", "pei", evaluator_of_run(state))]
    with rq_queue(redis_url) as q:
        (first,) = await enqueue(aredis, q, wanted, policy=POLICY)
        assert (await enqueue(aredis, q, wanted, policy=POLICY))[0].fate == "pending"
        q.empty()  # rq's queue and its jobs, gone
        assert first.fate == "enqueued"
        (again,) = await enqueue(aredis, q, wanted, policy=POLICY)
        assert (again.fate, again.job_id) == ("requeued", first.job_id)
        async with llm_worker(redis_url):
            assert await wait_process(start_assessor(assessor_env(redis_url, tmp_path))) == 0
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed) and record.value == 4


async def test_a_dead_lettered_evaluator_call_is_answered_to_its_job_not_to_the_run(
    aredis: aioredis.Redis,
) -> None:
    events = finished_run("run-1", "m", "Level 4")
    rating = rating_of(events)
    made = evaluator_input(events, load_instrument("pei"))
    task = evaluator_task(rating, made.messages, f"{rating.job_id}/1", None)
    hook = tell_run_of_dead_letter(await Inbox.open(aredis))
    fields = {k.encode(): v for k, v in message_to_fields(task).items()}  # as read from Redis
    await hook(Delivery(b"1-0", fields), "delivered 6 times without success")
    reply = await evaluator_calls.wait_reply(aredis, rating.job_id, task.task_id, 5)
    assert reply is not None and reply.kind == "LLMFailed" and reply.data["retryable"]
    assert "dead-lettered" in reply.data["error"]
    assert await aredis.xlen(INBOX) == 0  # the ended run is told nothing
