"""Putting ratings on rq's queue, and saying where each one is.

A rating is claimed in the platform's own record first (``assessments.claim``: one
script on the run's slot) and only a rating claimed now is enqueued: a deterministic
rq job id alone does not make enqueueing idempotent (rq/rq#1701: a second enqueue of
the same id queues it twice). Enqueueing what is claimed or done adds nothing, unless
forced: then each forced rating takes the next repeat number. A claim whose rq job is
gone (rq's Redis lost it) or ended without a record (a job abandoned on its last
attempt) is enqueued again under the same id, so enqueueing again heals it.

The queue is ordered by evaluator: every rating of one evaluator model, then the
next's. Workers take jobs in order, so the LLM worker sees one evaluator's calls
together and each evaluator model is loaded once per host where its limits allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import redis
import redis.asyncio as aioredis
from rq import Callback, Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from contreact_assessor.evaluators import Evaluator, Rating
from contreact_bus import assessments
from contreact_events.names import ASSESS_QUEUE

JOB_FUNCTION = "contreact_assessor.jobs.rate_job"
FAILURE_CALLBACK = "contreact_assessor.jobs.on_failure"
RESULT_TTL_S = 7 * 24 * 3600
"""rq's own record of a job's result (the rating's record is the assessment stream)."""

LIVE_STATES = {
    JobStatus.QUEUED,
    JobStatus.STARTED,
    JobStatus.SCHEDULED,
    JobStatus.DEFERRED,
    JobStatus.FINISHED,
}


@dataclass(frozen=True)
class Wanted:
    run_id: str
    instrument: str
    evaluator: Evaluator


@dataclass(frozen=True)
class JobPolicy:
    retries: int = 3
    intervals_s: tuple[int, ...] = (10, 30, 60)
    job_timeout_s: int = 3600


Fate = Literal["enqueued", "requeued", "done", "pending"]


@dataclass(frozen=True)
class Placed:
    run_id: str
    instrument: str
    evaluator: str
    repeat: int
    job_id: str
    fate: Fate


def queue(connection: redis.Redis) -> Queue:
    """The assessment queue on rq's Redis (jobs as JSON, never pickles)."""
    return Queue(ASSESS_QUEUE, connection=connection, serializer=JSONSerializer)


def in_evaluator_order(wanted: Iterable[Wanted]) -> list[Wanted]:
    """Grouped by evaluator (then instrument, run): one model's calls together."""
    return sorted(
        wanted, key=lambda w: (w.evaluator.model, w.evaluator.backend, w.instrument, w.run_id)
    )


async def enqueue(
    redis_: aioredis.Redis,
    rq_queue: Queue,
    wanted: Sequence[Wanted],
    *,
    repeats: int = 1,
    force: bool = False,
    policy: JobPolicy = JobPolicy(),
    requested_by: str = "cli",
) -> list[Placed]:
    """Claim and enqueue every wanted rating, repeats 1..``repeats`` (``force``:
    ``repeats`` new repeats each). Returns what became of each."""
    placed: list[Placed] = []
    for want in in_evaluator_order(wanted):
        for n in range(1, repeats + 1):
            got = await assessments.claim(
                redis_, want.run_id, want.instrument, want.evaluator.model, None if force else n
            )
            rating = Rating(
                run_id=want.run_id,
                instrument=want.instrument,
                repeat=got.repeat,
                job_id=got.job_id,
                evaluator=want.evaluator,
                forced=force,
                requested_by=requested_by,
            )
            fate: Fate
            if got.claimed:
                try:
                    _put(rq_queue, rating, policy)
                except Exception:
                    key = assessments.RatingKey(want.instrument, want.evaluator.model, got.repeat)
                    await assessments.release_claim(redis_, want.run_id, key)
                    raise
                fate = "enqueued"
            elif got.entry_id is not None:
                fate = "done"
            elif _lost(rq_queue, got.job_id):
                _put(rq_queue, rating, policy)
                fate = "requeued"
            else:
                fate = "pending"
            placed.append(
                Placed(
                    want.run_id, want.instrument, want.evaluator.model, got.repeat, got.job_id, fate
                )
            )
    return placed


def _put(rq_queue: Queue, rating: Rating, policy: JobPolicy) -> None:
    retry = Retry(max=policy.retries, interval=list(policy.intervals_s)) if policy.retries else None
    rq_queue.enqueue(
        JOB_FUNCTION,
        rating.model_dump(mode="json"),
        job_id=rating.job_id,
        retry=retry,
        job_timeout=policy.job_timeout_s,
        result_ttl=RESULT_TTL_S,
        failure_ttl=RESULT_TTL_S,
        description=(
            f"{rating.evaluator.model} rates {rating.run_id} "
            f"({rating.instrument}, repeat {rating.repeat})"
        ),
        meta={"retries": policy.retries},
        on_failure=Callback(FAILURE_CALLBACK),
    )


def job_state(rq_queue: Queue, job_id: str) -> str:
    """rq's state of a job ('missing' when rq's Redis does not know it)."""
    try:
        job = Job.fetch(job_id, connection=rq_queue.connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return "missing"
    status = job.get_status(refresh=False)
    return str(status.value if status is not None else "missing")


def _lost(rq_queue: Queue, job_id: str) -> bool:
    """A claimed rating that no job will record: its job is gone or ended failed."""
    return job_state(rq_queue, job_id) not in {s.value for s in LIVE_STATES}
