"""Putting ratings on rq's queue, and saying where each one is (the producer side of
the assessor: the CLI enqueues through this module, and the assessor service runs the
job it names, ``JOB_FUNCTION``, by name; rq is this package's ``rq`` extra).

A rating is claimed in the platform's own record first (``store.claim``: one script on
the run's slot) and only a rating claimed now is enqueued: a deterministic rq job id
alone does not make enqueueing idempotent (rq/rq#1701: a second enqueue of the same id
queues it twice). Enqueueing what is claimed or done adds nothing, unless forced: then
each forced rating takes the next repeat number. A claim whose rq job is gone (rq's
Redis lost it) or ended without a record (a job abandoned on its last attempt) is
enqueued again under the same id, so enqueueing again heals it. A rating recorded as
failed for a transient reason (no answer in time, a transient backend error, a killed
worker) is asked again under the same repeat (``store.reclaim``), by a job of its own
id, so a wait is never a permanent failure and never counts as a repeat. The same
rating asked twice in one call (a run named and also in ``--experiment``) is one.

The queue is ordered by evaluator: every rating of one evaluator model, then the
next's; or, for a host that holds K models at once, K evaluators' ratings at a time,
interleaved. Workers take jobs in order, so the LLM worker sees K evaluators' calls
together and each evaluator model is loaded once per host where its limits allow
(placement never swaps out a model whose calls wait). Enough assessors keep the host
busy: K models x the calls a host runs of each at once.

``--models-at-once K`` (default 2: a host's ``OLLAMA_MAX_LOADED_MODELS``) sets K; run at
least K x a host's parallel calls of assessors, plus a couple to prepare the next calls
(``bench.research.assessment_matrix``: 8 assessors for 2 x 3 calls, 1.07x the lower
bound, each of 6 evaluators loaded once).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis
import redis.asyncio as aioredis
from rq import Callback, Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from contreact_bus.assessments import store
from contreact_bus.assessments.evaluators import Evaluator, Rating
from contreact_bus.assessments.readings import RatingKey
from contreact_events.catalog.assessment import AssessmentFailed
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
    """How rq runs a rating: ``retries`` after a failed attempt, with the waits
    between them (the last repeats), each attempt stopped after ``job_timeout_s``
    (longer than the assessor's wait for an answer, ``reply_timeout_s``: 900 s). A
    worker killed mid-job is found out ``job_timeout_s`` + 60 s after the job started."""

    retries: int = 3
    intervals_s: tuple[int, ...] = (10, 30, 60)
    job_timeout_s: int = 8 * 3600
    """Longer than the assessor's wait for a worker to take the call (``queue_wait_s``)
    plus the call itself (``reply_timeout_s``): a call may wait behind live runs."""


Fate = Literal["enqueued", "requeued", "retried", "done", "pending"]


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


def in_evaluator_order(wanted: Iterable[Wanted], models_at_once: int = 1) -> list[Wanted]:
    """Grouped by evaluator, so each evaluator model is loaded once: every rating of
    one evaluator before the next's. With ``models_at_once`` = K > 1 (a host holds K
    models), K evaluators' groups at a time are interleaved, so the workers keep K
    models busy together and the next K are loaded once those are done."""
    groups: dict[tuple[str, str], list[Wanted]] = {}
    for want in sorted(
        wanted, key=lambda w: (w.evaluator.model, w.evaluator.backend, w.instrument, w.run_id)
    ):
        groups.setdefault((want.evaluator.model, want.evaluator.backend), []).append(want)
    ordered = list(groups.values())
    out: list[Wanted] = []
    step = max(models_at_once, 1)
    for start in range(0, len(ordered), step):
        wave = ordered[start : start + step]
        for i in range(max(len(group) for group in wave)):
            out += [group[i] for group in wave if i < len(group)]
    return out


async def enqueue(
    redis_: aioredis.Redis,
    rq_queue: Queue,
    wanted: Sequence[Wanted],
    *,
    repeats: int = 1,
    force: bool = False,
    policy: JobPolicy = JobPolicy(),
    requested_by: str = "cli",
    models_at_once: int = 1,
    follow_up: bool = True,
) -> list[Placed]:
    """Claim and enqueue every wanted rating, repeats 1..``repeats`` (``force``:
    ``repeats`` new repeats each), in evaluator order (``in_evaluator_order``), each
    (run, instrument, evaluator) once however often it is asked. Returns what became
    of each."""
    asks = [
        (want, None if force else n)
        for want in in_evaluator_order(unique(wanted), models_at_once)
        for n in range(1, repeats + 1)
    ]
    claims = await store.claim_many(
        redis_, [(w.run_id, w.instrument, w.evaluator.model, n) for w, n in asks]
    )
    transient = await _transient_failures(redis_, asks, claims) if not force else {}
    placed: list[Placed] = []
    fresh: list[Rating] = []
    for (want, _n), got in zip(asks, claims, strict=True):
        rating = Rating(
            run_id=want.run_id,
            instrument=want.instrument,
            repeat=got.repeat,
            job_id=got.job_id,
            evaluator=want.evaluator,
            forced=force,
            requested_by=requested_by,
            follow_up=follow_up,
        )
        fate: Fate
        if got.claimed:
            fresh.append(rating)
            fate = "enqueued"
        elif got.entry_id is not None and got.entry_id in transient:
            failed = transient[got.entry_id]
            key = RatingKey(want.instrument, want.evaluator.model, got.repeat)
            retry_id = f"{store.job_id(want.run_id, key)}-t{got.entry_id.replace('-', '_')}"
            if not await store.reclaim(redis_, want.run_id, key, got.entry_id, retry_id):
                fate = "pending"  # another `assess` asked it again just now
            else:
                rating = rating.model_copy(update={"job_id": retry_id, "retry_of": failed})
                fresh.append(rating)
                fate = "retried"
        elif got.entry_id is not None:
            fate = "done"
        elif _lost(rq_queue, got.job_id):
            rq_queue.enqueue_many([_job_data(rating, policy)])
            fate = "requeued"
        else:
            fate = "pending"
        placed.append(
            Placed(
                want.run_id, want.instrument, want.evaluator.model, got.repeat, rating.job_id, fate
            )
        )
    try:
        with rq_queue.connection.pipeline() as pipe:
            rq_queue.enqueue_many([_job_data(r, policy) for r in fresh], pipeline=pipe)
            pipe.execute()
    except Exception:  # no job will answer these claims: give them back
        for rating in fresh:
            key = RatingKey(rating.instrument, rating.evaluator.model, rating.repeat)
            await store.release_claim(redis_, rating.run_id, key)
        raise
    return placed


def unique(wanted: Iterable[Wanted]) -> list[Wanted]:
    """Each (run, instrument, evaluator model) once, the first asked."""
    seen: dict[tuple[str, str, str], Wanted] = {}
    for want in wanted:
        seen.setdefault((want.run_id, want.instrument, want.evaluator.model), want)
    return list(seen.values())


async def _transient_failures(
    redis_: aioredis.Redis,
    asks: Sequence[tuple[Wanted, int | None]],
    claims: Sequence[store.Claim],
) -> dict[str, str]:
    """Entry id -> event id of each recorded rating asked for that failed for a
    transient reason (one round trip)."""
    done = [(w.run_id, c.entry_id) for (w, _n), c in zip(asks, claims, strict=True) if c.entry_id]
    found = await store.records_at(redis_, done)
    return {
        entry_id: record.event_id
        for (_run, entry_id), record in zip(done, found, strict=True)
        if isinstance(record, AssessmentFailed) and record.transient
    }


def _job_data(rating: Rating, policy: JobPolicy) -> Any:
    retry = Retry(max=policy.retries, interval=list(policy.intervals_s)) if policy.retries else None
    return Queue.prepare_data(
        JOB_FUNCTION,
        [rating.model_dump(mode="json")],
        job_id=rating.job_id,
        retry=retry,
        timeout=policy.job_timeout_s,
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
