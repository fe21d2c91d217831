"""The fork protocol between whoever asks for a fork (``contreact fork``, an experiment
file's ``fork`` section) and the orchestrator, in one place (as ``assessments/calls.py``
holds the evaluator calls'):

- the request: a ``ForkRequested`` inbox message for the child's run id
  (``send_fork``, or ``queue_fork`` into a caller's pipeline); its message id becomes the
  event id of the child's ``RunForked``;
- the answer, one of two: the child's first append (the copied prefix, then that
  ``RunForked`` at position ``prefix_len``, in one write), or a refusal in one line
  under the request's own key (``refuse``; kept ``FORK_REFUSAL_TTL_S``);
- the wait (``wait_for_fork``): two O(1) reads a poll (the refusal, the child's log
  length); once the child's log exists, the entry at ``prefix_len`` tells whether this
  request was logged or another took the id (``logged_fork_id``: the one entry decoded).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Literal

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.replies import text
from contreact_bus.run_log import RunLog
from contreact_bus.streams.inbox import Inbox
from contreact_events.names import FORK_REFUSAL_TTL_S, run_fork_refusal_key, run_log_key
from contreact_events.wire.tasks import ForkRequest, InboxMessage, fork_requested

MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class ForkAnswer:
    """What became of one fork request."""

    outcome: Literal["logged", "refused", "taken", "unanswered"]
    """``logged``: the child's log begins with this request's ``RunForked``; ``refused``:
    the orchestrator said why not (``reason``); ``taken``: the child's id holds another
    run (another request, or a run, was first); ``unanswered``: nothing within the wait."""
    reason: str = ""


async def send_fork(redis: aioredis.Redis, child: str, request: ForkRequest) -> InboxMessage:
    """Ask the orchestrator for the fork ``request`` as run ``child``; the message sent."""
    message = fork_requested(child, request)
    await (await Inbox.open(redis)).send(message)
    return message


def queue_fork(pipe: Pipeline, inbox: Inbox, child: str, request: ForkRequest) -> InboxMessage:
    """``send_fork`` in a caller's pipeline (no round trip of its own)."""
    message = fork_requested(child, request)
    inbox.queue(pipe, message)
    return message


async def refuse(redis: aioredis.Redis, message: InboxMessage, reason: str) -> None:
    """The orchestrator's answer to a fork request it will not log: why, in one line."""
    key = run_fork_refusal_key(message.run_id, message.msg_id)
    await redis.set(key, reason[:MAX_REASON_CHARS], ex=FORK_REFUSAL_TTL_S)


async def refusal(redis: aioredis.Redis, child: str, msg_id: str) -> str | None:
    """Why the request ``msg_id`` for run ``child`` was refused (None: it was not, yet)."""
    reason = await redis.get(run_fork_refusal_key(child, msg_id))
    return None if reason is None else text(reason)


async def logged_fork_id(log: RunLog, run_id: str, prefix_len: int) -> str | None:
    """The event id of the ``RunForked`` at position ``prefix_len`` of the run's log (None
    when there is none): a request finds its own message id there once it was logged."""
    if not prefix_len:
        return None
    entry = await log.entry_at(run_id, prefix_len)
    return entry.event_id if entry is not None and entry.type == "RunForked" else None


async def wait_for_fork(
    redis: aioredis.Redis,
    child: str,
    msg_id: str,
    prefix_len: int,
    wait_s: float,
    *,
    poll_s: float = 0.05,
) -> ForkAnswer:
    """Wait for the orchestrator's answer to the request ``msg_id`` for run ``child``,
    whose log would copy ``prefix_len`` events (``history.fork.check_fork``)."""
    deadline = time.monotonic() + wait_s
    refusal_key = run_fork_refusal_key(child, msg_id)
    while True:
        async with redis.pipeline(transaction=False) as pipe:
            pipe.get(refusal_key)
            pipe.xlen(run_log_key(child))
            reason, length = await pipe.execute()
        if reason is not None:
            return ForkAnswer("refused", text(reason))
        if length:  # the child's first append is one write: all of it is there
            if await logged_fork_id(RunLog(redis), child, prefix_len) == msg_id:
                return ForkAnswer("logged")
            return ForkAnswer("taken", f"run {child} exists (another request or run was first)")
        if time.monotonic() >= deadline:
            return ForkAnswer("unanswered")
        await asyncio.sleep(poll_s)
