"""The rq job: one rating of one run by one evaluator on one instrument.

``rate_job`` is what rq calls (in the worker process: ``SimpleWorker``, no fork). It
builds the evaluator's input from the run's log (``evaluator_input``: the history as
the agent last saw it, then the instrument's prompt), sends the call to the LLM
worker with ``reply_to`` = the job (``evaluator_calls``), waits for the answer, parses
it (``parse_answer``) and records ``RunAssessed``, or ``AssessmentFailed``, once
(``assessments.record``: a retried attempt, or one whose worker was killed after its
write, records nothing twice), then appends it to the run's assessment archive.

What fails: a rating that cannot be made as asked (the run has not ended, its log
cannot be read, the worker answered a failure that is not transient) is recorded as
``AssessmentFailed`` at once. A transient failure (no answer within
``reply_timeout_s``, a transient backend error) raises, and rq retries the job with
backoff; the last attempt records ``AssessmentFailed`` instead of raising, so every
rating ends as a visible record.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis.asyncio as aioredis
from rq import get_current_job
from rq.exceptions import AbandonedJobError
from rq.job import Job

from contreact_assessor.evaluators import Rating, evaluator_task
from contreact_assessor.exceptions import EvaluatorCallFailed, RatingImpossible
from contreact_assessor.records import assessed_event, failed_event
from contreact_assessor.settings import AssessorSettings
from contreact_bus import assessments
from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.connection import connect
from contreact_bus.exceptions import RunNotFound
from contreact_bus.runs import load_events
from contreact_events.catalog.assessment import AssessmentEvent, RunAssessed
from contreact_events.catalog.chat import LLMUsage
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.evaluation import EvaluatorInput, evaluator_input
from contreact_events.instruments import Instrument, load_instrument, parse_answer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What an attempt did: the entry it recorded (or found recorded) and whether new."""

    entry_id: str
    new: bool
    status: str


def rate_job(rating_data: dict[str, object]) -> dict[str, object]:
    """rq's entry point (JSON in, JSON out). Settings come from the worker's
    environment, as a service's main builds them."""
    settings = AssessorSettings()
    rating = Rating.model_validate(rating_data)
    job = get_current_job()
    attempt, last = _attempt(job)
    outcome = asyncio.run(_rate(settings, rating, attempt=attempt, last=last))
    return {"entry_id": outcome.entry_id, "new": outcome.new, "status": outcome.status}


def on_failure(
    job: Job, connection: object, exc_type: type, exc: BaseException, tb: object
) -> None:
    """rq's failure callback: an attempt raised (or its worker died: rq's cleanup of
    abandoned jobs calls it too). When rq will not retry it, the rating is recorded as
    ``AssessmentFailed``, so no rating ends without a record."""
    if job.should_retry:
        return
    rating = Rating.model_validate(job.args[0])
    attempt, _last = _attempt(job)
    if isinstance(exc, AbandonedJobError):
        error = "the assessor worker stopped during the job's last attempt (it was killed?)"
    else:
        error = f"{exc_type.__name__}: {exc}"
    asyncio.run(_record_failure(AssessorSettings(), rating, error, attempt))


async def _record_failure(
    settings: AssessorSettings, rating: Rating, error: str, attempt: int
) -> None:
    redis = await connect(settings.redis_url)
    try:
        key = assessments.RatingKey(rating.instrument, rating.evaluator.model, rating.repeat)
        await assessments.record(redis, failed_event(rating, error, attempts=attempt), key)
        await _archive(redis, settings, rating.run_id)
    finally:
        await redis.aclose()


def _attempt(job: object) -> tuple[int, bool]:
    """(which attempt this is, whether it is the last): rq counts retries down."""
    if job is None:
        return 1, True
    left = getattr(job, "retries_left", None) or 0
    total = int(getattr(job, "meta", {}).get("retries", 0))
    return total - left + 1, left <= 0


async def _rate(settings: AssessorSettings, rating: Rating, *, attempt: int, last: bool) -> Outcome:
    redis = await connect(settings.redis_url)
    try:
        return await rate(redis, settings, rating, attempt=attempt, last=last)
    finally:
        await redis.aclose()


async def rate(
    redis: aioredis.Redis,
    settings: AssessorSettings,
    rating: Rating,
    *,
    attempt: int = 1,
    last: bool = True,
) -> Outcome:
    """One attempt at ``rating``; raises ``EvaluatorCallFailed`` for rq to retry
    unless ``last``."""
    key = assessments.RatingKey(rating.instrument, rating.evaluator.model, rating.repeat)
    done = (await assessments.index(redis, rating.run_id)).get(key, "")
    if done.startswith("entry:"):  # recorded by an earlier attempt: archive it, if need be
        await _archive(redis, settings, rating.run_id)
        return Outcome(done.removeprefix("entry:"), False, "recorded before")
    instrument: Instrument | None = None
    made: EvaluatorInput | None = None
    try:
        instrument, made = await _input(redis, settings, rating)
        event: AssessmentEvent = await _call(redis, settings, rating, instrument, made, attempt)
    except RatingImpossible as exc:
        event = failed_event(rating, str(exc), attempts=attempt, instrument=instrument, made=made)
    except EvaluatorCallFailed as exc:
        if not last:
            log.info("%s: attempt %d failed (%s); rq retries it", rating.job_id, attempt, exc)
            raise
        event = failed_event(rating, str(exc), attempts=attempt, instrument=instrument, made=made)
    recorded = await assessments.record(redis, event, key)
    await _archive(redis, settings, rating.run_id)
    status = event.status if isinstance(event, RunAssessed) else "failed"
    return Outcome(recorded.entry_id, recorded.new, status)


async def _call(
    redis: aioredis.Redis,
    settings: AssessorSettings,
    rating: Rating,
    instrument: Instrument,
    made: EvaluatorInput,
    attempt: int,
) -> RunAssessed:
    """Send the evaluator call to the LLM worker, wait for its answer, parse it."""
    started = datetime.now(UTC)
    task_id = f"{rating.job_id}/{attempt}-{uuid.uuid4().hex[:8]}"
    deadline = started + timedelta(seconds=settings.reply_timeout_s)
    task = evaluator_task(rating, made.messages, task_id, deadline)
    await evaluator_calls.send_call(redis, task)
    try:
        reply = await evaluator_calls.wait_reply(
            redis, rating.job_id, task_id, settings.reply_timeout_s
        )
    finally:
        await evaluator_calls.close_call(redis, rating.job_id)
    if reply is None:
        raise EvaluatorCallFailed(
            f"the LLM worker did not answer within {settings.reply_timeout_s:.0f} s "
            "(is an llm-worker running? `contreact status`)"
        )
    data = reply.data
    if reply.kind == "LLMFailed":
        error = str(data.get("error", "the evaluator call failed"))
        if data.get("retryable"):
            raise EvaluatorCallFailed(error)
        raise RatingImpossible(error)
    message = data.get("message") or {}
    raw = str(message.get("content", "")) if isinstance(message, dict) else ""
    hosts = rating.evaluator.hosts
    return assessed_event(
        rating,
        instrument,
        made,
        raw=raw,
        parsed=parse_answer(instrument, raw),
        usage=LLMUsage.model_validate(data.get("usage") or {}),
        model_ran=str(data.get("model") or rating.evaluator.model),
        host=hosts[0] if len(hosts) == 1 else None,
        attempts=attempt,
    )


async def _input(
    redis: aioredis.Redis, settings: AssessorSettings, rating: Rating
) -> tuple[Instrument, EvaluatorInput]:
    try:
        instrument = load_instrument(rating.instrument)
        events = await load_events(redis, settings.archive_dir, rating.run_id)
        return instrument, evaluator_input(events, instrument)
    except (ContReActEventError, RunNotFound, OSError) as exc:
        raise RatingImpossible(str(exc)) from None


async def _archive(redis: aioredis.Redis, settings: AssessorSettings, run_id: str) -> None:
    """Append the run's records that its archive lacks (each once, by event id)."""
    (records,) = await assessments.redis_records(redis, [run_id])
    await asyncio.to_thread(assessments.append_archive, settings.archive_dir, run_id, records)
