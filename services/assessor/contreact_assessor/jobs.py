"""The rq job: one rating of one run by one evaluator on one instrument.

``rate_job`` is what rq calls (in the worker process: ``SimpleWorker``, no fork). It
builds the evaluator's input from the run's log (``evaluator_input``: the history as
the agent last saw it, then the instrument's prompt), has the LLM worker check the
evaluator model (its digest), sends the rating call with ``reply_to`` = the job
(``evaluator_calls``), waits for the answer, parses it (``parse_answer``) and, when the
parser finds no level (or several), asks the follow-up in the same conversation with
structured output (``questions``). It records ``RunAssessed``, or ``AssessmentFailed``,
once (``assessments.record``: a retried attempt, or one whose worker was killed after
its write, records nothing twice), then appends it to the run's assessment archive.

Waiting is not failing: a call's time starts when a worker takes it
(``LLMTask.call_timeout_s``), so a call that waits behind live runs is rated once it
runs; the job may wait ``queue_wait_s`` for that, and keeps its rq execution alive
meanwhile (a heartbeat, so a killed worker is still found out within minutes).

What fails: a rating that cannot be made as asked (the run has not ended, its log
cannot be read, the worker answered a failure that is not transient) is recorded as
``AssessmentFailed`` at once. A transient failure (no answer, a transient backend error)
raises, and rq retries the job with backoff; the last attempt records a transient
``AssessmentFailed`` instead of raising, which the next ``contreact assess`` asks again.
A follow-up that cannot be asked (a backend without structured output) or answered
leaves the parser's reading, with the reason in the record.

Jobs run in the worker's process because a forked work horse per job spent 1.3 s of a
0.1 s job touching the parent's memory again. rq's started registry gives a job its
timeout plus a minute, and a waiting job renews its own entry (``BEAT_TTL_S``); a
worker killed mid-job leaves its job there, rq's maintenance (every worker runs it)
finds it abandoned once that lapses, calls the failure callback (``on_failure``) and
retries it, and the retry records once. rq's job timeout is above both waits of the
call and its follow-up.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis
from rq import get_current_job
from rq.exceptions import AbandonedJobError
from rq.job import Job
from rq.timeouts import JobTimeoutException

from contreact_assessor.exceptions import EvaluatorCallFailed, RatingImpossible
from contreact_assessor.questions import (
    check_task,
    evaluator_task,
    needs_follow_up,
    question,
    read_answer,
    schema,
)
from contreact_assessor.records import (
    Answer,
    Reading,
    assessed_event,
    failed_event,
    parser_reading,
)
from contreact_assessor.settings import AssessorSettings
from contreact_bus import assessments
from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.assessments.evaluators import Rating
from contreact_bus.connection import connect
from contreact_bus.exceptions import RunNotFound
from contreact_bus.failover.durability import ReplicasBehind
from contreact_bus.runs import load_events
from contreact_events.catalog.assessment import AssessmentEvent, FollowUp, RunAssessed
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cycle import LLMFailed, LLMResponded
from contreact_events.catalog.run import ModelChecked
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.evaluation import EvaluatorInput, evaluator_input
from contreact_events.instruments import Instrument, load_instrument, parse_answer
from contreact_events.wire.tasks import LLMTask

log = logging.getLogger(__name__)

Beat = Callable[[], Awaitable[None]]
CHECKED: dict[tuple[str, str, tuple[str, ...]], tuple[float, str | None]] = {}
"""Evaluator models this process has checked: (backend, model, hosts) -> (when, digest).
The jobs of one evaluator follow each other (``queueing.in_evaluator_order``): its
first job checks the model, the next ones within ``CHECKED_TTL_S`` reuse the digest."""
CHECKED_TTL_S = 300.0
BEAT_TTL_S = 180
"""How long rq keeps a job's execution alive after its last heartbeat: a worker killed
mid-job is found out this long after (rq's cleanup of abandoned jobs)."""


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
    beat = _heartbeat(job) if job is not None else None
    outcome = asyncio.run(_rate(settings, rating, attempt=attempt, last=last, beat=beat))
    return {"entry_id": outcome.entry_id, "new": outcome.new, "status": outcome.status}


def on_failure(
    job: Job, connection: object, exc_type: type, exc: BaseException, tb: object
) -> None:
    """rq's failure callback: an attempt raised (or its worker died: rq's cleanup of
    abandoned jobs calls it too). When rq will not retry it, the rating is recorded as
    ``AssessmentFailed``, so no rating ends without a record; a killed worker or a job
    out of time is a transient failure, asked again by the next ``contreact assess``."""
    if job.should_retry:
        return
    rating = Rating.model_validate(job.args[0])
    attempt, _last = _attempt(job)
    if isinstance(exc, AbandonedJobError):
        error = "the assessor worker stopped during the job's last attempt (it was killed?)"
    else:
        error = f"{exc_type.__name__}: {exc}"
    transient = isinstance(exc, AbandonedJobError | JobTimeoutException | ReplicasBehind)
    asyncio.run(_record_failure(AssessorSettings(), rating, error, attempt, transient))


async def _record_failure(
    settings: AssessorSettings, rating: Rating, error: str, attempt: int, transient: bool
) -> None:
    redis = await connect(settings.redis)
    try:
        key = assessments.RatingKey(rating.instrument, rating.evaluator.model, rating.repeat)
        failed = failed_event(rating, error, attempts=attempt, transient=transient)
        await assessments.record(redis, failed, key, settings.durability)
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


def _heartbeat(job: Job) -> Beat:
    """Keep the job's rq executions alive (``BEAT_TTL_S``) while it waits."""

    def beat_now() -> None:
        with job.connection.pipeline() as pipe:
            for execution in job.get_executions():
                execution.heartbeat(job.started_job_registry, BEAT_TTL_S, pipe)
            pipe.execute()

    async def beat() -> None:
        try:
            await asyncio.to_thread(beat_now)
        except Exception as exc:  # the next beat tries again
            log.warning("%s: heartbeat failed: %s", job.id, exc)

    return beat


async def _rate(
    settings: AssessorSettings, rating: Rating, *, attempt: int, last: bool, beat: Beat | None
) -> Outcome:
    redis = await connect(settings.redis)
    try:
        return await rate(redis, settings, rating, attempt=attempt, last=last, beat=beat)
    finally:
        await redis.aclose()


async def rate(
    redis: aioredis.Redis,
    settings: AssessorSettings,
    rating: Rating,
    *,
    attempt: int = 1,
    last: bool = True,
    beat: Beat | None = None,
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
        asking = Asking(redis, settings, rating, attempt, beat)
        event: AssessmentEvent = await _call(asking, instrument, made)
    except RatingImpossible as exc:
        event = failed_event(rating, str(exc), attempts=attempt, instrument=instrument, made=made)
    except EvaluatorCallFailed as exc:
        if not last:
            log.info("%s: attempt %d failed (%s); rq retries it", rating.job_id, attempt, exc)
            raise
        event = failed_event(
            rating, str(exc), attempts=attempt, transient=True, instrument=instrument, made=made
        )
    recorded = await assessments.record(redis, event, key, settings.durability)
    await _archive(redis, settings, rating.run_id)
    status = event.status if isinstance(event, RunAssessed) else "failed"
    return Outcome(recorded.entry_id, recorded.new, status)


@dataclass(frozen=True)
class Asking:
    """One attempt's calls through the LLM worker, each answered to the job."""

    redis: aioredis.Redis
    settings: AssessorSettings
    rating: Rating
    attempt: int
    beat: Beat | None

    def task_id(self, what: str) -> str:
        return f"{self.rating.job_id}/{self.attempt}-{what}-{uuid.uuid4().hex[:8]}"

    async def send(self, task: LLMTask, timeout_s: float, queue_wait_s: float | None) -> Any:
        """Send ``task``, wait for its answer; the answer as a typed event."""
        job = self.rating.job_id
        await evaluator_calls.send_call(self.redis, task)
        try:
            reply = await evaluator_calls.wait_reply(
                self.redis, job, task.task_id, timeout_s, queue_wait_s=queue_wait_s, beat=self.beat
            )
        finally:
            await evaluator_calls.close_call(self.redis, job)
        if reply is None:
            return None
        try:
            return reply.to_event(datetime.now(UTC))
        except ContReActEventError as exc:
            raise RatingImpossible(f"the LLM worker's answer cannot be read: {exc}") from None

    async def digest(self) -> str | None:
        """The evaluator model's digest, from its check (None where the backend has
        none, or the check did not pass: the call then says why). A digest checked by
        this process within ``CHECKED_TTL_S`` is not asked again."""
        ev = self.rating.evaluator
        key = (ev.backend, ev.model, ev.hosts)
        known = CHECKED.get(key)
        if known is not None and time.monotonic() - known[0] < CHECKED_TTL_S:
            return known[1]
        wait_s = self.settings.check_timeout_s
        deadline = datetime.now(UTC) + timedelta(seconds=wait_s)
        task = check_task(self.rating, self.task_id("check"), deadline)
        event = await self.send(task, wait_s + 5, None)
        if event is None:
            raise EvaluatorCallFailed(
                f"the LLM worker did not answer the evaluator's model check within {wait_s:.0f} s"
                " (is an llm-worker running? `contreact status`)"
            )
        if not (isinstance(event, ModelChecked) and event.ok):
            return None
        CHECKED[key] = (time.monotonic(), event.model_digest)
        return event.model_digest

    async def chat(
        self, messages: tuple[ChatMessage, ...], what: str, json_schema: Any = None
    ) -> LLMResponded:
        settings = self.settings
        task = evaluator_task(
            self.rating,
            messages,
            self.task_id(what),
            settings.reply_timeout_s,
            json_schema=json_schema,
        )
        event = await self.send(task, settings.reply_timeout_s + 30, settings.queue_wait_s)
        if event is None:
            raise EvaluatorCallFailed(
                f"no LLM worker took the {what} call within {settings.queue_wait_s:.0f} s, or "
                f"its answer took longer than {settings.reply_timeout_s:.0f} s "
                "(is an llm-worker running? `contreact status`)"
            )
        if isinstance(event, LLMFailed):
            if event.retryable:
                raise EvaluatorCallFailed(event.error)
            raise RatingImpossible(event.error)
        if not isinstance(event, LLMResponded):
            raise RatingImpossible(f"the LLM worker answered the {what} call with {event.type}")
        return event


async def _call(asking: Asking, instrument: Instrument, made: EvaluatorInput) -> RunAssessed:
    """Check the evaluator model, ask for the rating, parse it; ask the follow-up when
    the parser found no level."""
    rating = asking.rating
    digest = await asking.digest()
    first = await asking.chat(made.messages, "rating")
    answer = Answer(first.message, first.usage, first.model or rating.evaluator.model, digest)
    parsed = parse_answer(instrument, answer.message.content)
    reading = parser_reading(parsed)
    if rating.follow_up and needs_follow_up(parsed):
        reading = await _follow_up(asking, instrument, made, answer.message.content, reading)
    hosts = rating.evaluator.hosts
    return assessed_event(
        rating,
        instrument,
        made,
        answer=answer,
        parsed=parsed,
        reading=reading,
        host=hosts[0] if len(hosts) == 1 else None,
        attempts=asking.attempt,
    )


async def _follow_up(
    asking: Asking, instrument: Instrument, made: EvaluatorInput, raw: str, parsed: Reading
) -> Reading:
    """The follow-up, in the same conversation, with structured output. Its level (or
    refusal) is the reading; anything else leaves the parser's, with the reason."""
    text = question(instrument)
    messages = (
        *made.messages,
        ChatMessage(role="assistant", content=raw),
        ChatMessage(role="user", content=text),
    )
    try:
        event = await asking.chat(messages, "follow-up", schema(instrument))
    except (EvaluatorCallFailed, RatingImpossible) as exc:
        note = " ".join(f"no follow-up answer: {exc}; the parser's reading stands".split())
        log.warning("%s: %s", asking.rating.job_id, note)
        return replace(parsed, follow_up=FollowUp(question=text, note=note[:2000]))
    content = event.message.content
    status, value, label, note = read_answer(instrument, content)
    follow = FollowUp(
        question=text,
        raw_answer=content,
        raw_thinking=event.message.thinking or None,
        status=status,
        value=value,
        label=label,
        note=note,
        usage=event.usage,
    )
    if status != "unparseable":  # a level, a refusal (or a level the scale lacks)
        return Reading(status, value, label, "follow_up", follow)
    return replace(parsed, follow_up=follow)


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
