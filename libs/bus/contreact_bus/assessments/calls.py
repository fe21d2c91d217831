"""An assessment job's evaluator call through the LLM worker.

The job does not call a model itself: it sends an ``LLMTask`` with ``reply_to`` = its
job id to the route's stream, as the orchestrator sends a run's calls, so the call
takes the same slots and placement as every other (an evaluation never evicts a model
a live run still needs). Two keys of the job, one hash tag:

- the *gate* (``assessment_gate_key``): the task id and digest of the call the job
  waits on now, written before the task is sent. The worker applies an assessment
  task only if it matches, as it checks a run's task against the run's log: a stale
  copy left by an attempt that was killed is dropped, never called.
- the *reply list* (``assessment_reply_key``): the worker pushes its answer (the same
  ``LLMResponded`` / ``LLMFailed`` inbox message a run would get) in the pipeline that
  acks the task; the job waits on it with BLPOP and ignores answers to other calls.

Both keys expire (``ttl_s``): nothing of a job outlives it for long.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.llm_routes import RouteStream, route_of
from contreact_bus.replies import text
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import assessment_gate_key, assessment_reply_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask, digest_matches, task_digest

DEFAULT_TTL_S = 24 * 3600


async def send_call(redis: aioredis.Redis, task: LLMTask, *, ttl_s: int = DEFAULT_TTL_S) -> None:
    """Open the job's gate for ``task`` (dropping any earlier call of the job), clear
    answers left by earlier attempts, then queue the task on its route."""
    if task.reply_to is None or task.kind != "chat":
        raise ValueError("an evaluator call is a chat task with reply_to set to its job id")
    gate = assessment_gate_key(task.reply_to)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.hset(gate, mapping={"task": task.task_id, "digest": task_digest(task)})
        pipe.expire(gate, ttl_s)
        pipe.delete(assessment_reply_key(task.reply_to))
        RouteStream(redis, route_of(task)).queue(pipe, task)
        await pipe.execute()


async def refusal(redis: aioredis.Redis, task: LLMTask, raw: bytes | None = None) -> str | None:
    """None if the job named by ``task.reply_to`` waits on exactly this call now
    (``raw``: the bytes the task arrived as)."""
    assert task.reply_to is not None
    task_id, digest = await redis.hmget(assessment_gate_key(task.reply_to), ["task", "digest"])
    if task_id is None:
        return f"assessment job {task.reply_to} waits on no call now (it ended or expired)"
    if text(task_id) != task.task_id:
        return f"assessment job {task.reply_to} waits on {text(task_id)}, not {task.task_id}"
    if not digest_matches(text(digest or b""), task, raw):
        return f"{task.task_id} is not the copy assessment job {task.reply_to} sent"
    if task.deadline is not None and datetime.now(UTC) > task.deadline:
        return f"{task.task_id} is past its deadline (the job has given up on it)"
    return None


def queue_reply(
    pipe: Pipeline, job_id: str, message: InboxMessage, ttl_s: int = DEFAULT_TTL_S
) -> None:
    """Add the answer for a job to a caller's pipeline (the worker's: with the ack)."""
    key = assessment_reply_key(job_id)
    pipe.rpush(key, message.__pydantic_serializer__.to_json(message))
    pipe.expire(key, ttl_s)


async def wait_reply(
    redis: aioredis.Redis, job_id: str, task_id: str, timeout_s: float
) -> InboxMessage | None:
    """The worker's answer to ``task_id`` (an answer to another call of the job is
    skipped), or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    key = assessment_reply_key(job_id)
    while (left := deadline - time.monotonic()) > 0:
        # (a second at a time: well under the client's socket timeout, 5 s by default)
        reply = await redis.blpop([key], timeout=max(min(left, 1.0), 0.01))
        if reply is None:
            continue
        try:
            message = message_from_fields(InboxMessage, {"msg": reply[1]})
        except ContReActEventError:
            continue
        if message.causation_id == task_id:
            return message
    return None


async def close_call(redis: aioredis.Redis, job_id: str) -> None:
    """The job waits on no call any more: a copy still queued is dropped unanswered."""
    await redis.delete(assessment_gate_key(job_id), assessment_reply_key(job_id))
