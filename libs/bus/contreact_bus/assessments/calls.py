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

A wait is not a failure: an evaluator call waits in a background line behind live runs
for as long as they keep the host busy, so its time is counted from when a worker
takes it. The worker marks the gate ``taken`` (``take``) and gives the call its
deadline then (``LLMTask.call_timeout_s`` from now); the job waits for the mark as
long as it may wait in the queue, then for the answer within the call's time.

The job's first call asks the LLM worker to check the evaluator model (``kind:
check``, answered to the job like its chat calls): the check reports the model's
digest where the backend has one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.llm_routes import llm_task_stream
from contreact_bus.replies import text
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import assessment_gate_key, assessment_reply_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask, digest_matches, task_digest

DEFAULT_TTL_S = 24 * 3600


async def send_call(redis: aioredis.Redis, task: LLMTask, *, ttl_s: int = DEFAULT_TTL_S) -> None:
    """Open the job's gate for ``task`` (dropping any earlier call of the job), clear
    answers left by earlier attempts, then queue the task on its route."""
    if task.reply_to is None or task.kind == "analysis":
        raise ValueError("an evaluator call is a chat or check task with reply_to: its job id")
    gate = assessment_gate_key(task.reply_to)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.delete(gate)  # (a ``taken`` mark of an earlier call goes with it)
        pipe.hset(gate, mapping={"task": task.task_id, "digest": task_digest(task)})
        pipe.expire(gate, ttl_s)
        pipe.delete(assessment_reply_key(task.reply_to))
        llm_task_stream(redis, task).queue(pipe, task)
        await pipe.execute()


TAKE_SCRIPT = """
if redis.call('HGET', KEYS[1], 'task') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'taken', ARGV[2])
  return 1
end
return 0
"""
"""Mark the job's gate (KEYS[1]) taken, if it still names the call (ARGV[1]); ARGV[2]
is when (ISO 8601)."""


async def take(redis: aioredis.Redis, task: LLMTask) -> LLMTask:
    """A worker starts ``task`` (a slot is held): the job's gate says so, and the call
    gets its deadline, ``call_timeout_s`` from now (a call without one keeps its own)."""
    assert task.reply_to is not None
    now = datetime.now(UTC)
    await redis.eval(
        TAKE_SCRIPT, 1, assessment_gate_key(task.reply_to), task.task_id, now.isoformat()
    )
    if task.call_timeout_s is None:
        return task
    return task.model_copy(update={"deadline": now + timedelta(seconds=task.call_timeout_s)})


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
    redis: aioredis.Redis,
    job_id: str,
    task_id: str,
    timeout_s: float,
    *,
    queue_wait_s: float | None = None,
    beat: Callable[[], Awaitable[None]] | None = None,
    beat_every_s: float = 30.0,
) -> InboxMessage | None:
    """The worker's answer to ``task_id`` (an answer to another call of the job is
    skipped), or None when none came in time. ``queue_wait_s`` None: ``timeout_s`` from
    now. Else the call may wait that long for a worker to take it (``take``), and then
    has ``timeout_s`` from the moment it was seen taken. ``beat`` is called every
    ``beat_every_s`` meanwhile (the job's heartbeat)."""
    started = time.monotonic()
    deadline = started + (timeout_s if queue_wait_s is None else queue_wait_s)
    taken = queue_wait_s is None
    next_beat = started + beat_every_s
    key = assessment_reply_key(job_id)
    while (left := deadline - time.monotonic()) > 0:
        # (a second at a time: well under the client's socket timeout, 5 s by default)
        reply = await redis.blpop([key], timeout=max(min(left, 1.0), 0.01))
        if beat is not None and time.monotonic() >= next_beat:
            next_beat = time.monotonic() + beat_every_s
            await beat()
        if reply is None:
            if not taken and await redis.hget(assessment_gate_key(job_id), "taken"):
                taken = True
                deadline = time.monotonic() + timeout_s
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
