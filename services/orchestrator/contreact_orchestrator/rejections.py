"""Inbox messages the orchestrator refuses, kept in the dead letters with the reason.

The result of the task a run waits on may be unreadable (a corrupt payload, a vector
of the wrong size). It is not dropped: the run gets ``TaskFailed`` (cause
``rejected``), retried within its budget like any other failure, and the message is
kept in the dead letters with the reason.

A ``RunForked`` is never taken from the inbox (``FORGED_FORK``): the orchestrator builds
it itself from a fork request, right after the prefix it copied and checked. ``decide``
cannot tell a forged one from its own: a run resting at its last cycle with analyses
open folds to the very state a fork's prefix does.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import redis.asyncio as aioredis

from contreact_events.catalog.delivery import TaskFailed
from contreact_events.core.state import AgentState
from contreact_events.names import DEAD_LETTER_STREAM
from contreact_events.wire.codec import message_to_fields
from contreact_events.wire.tasks import InboxMessage

log = logging.getLogger(__name__)

MAX_REASON_CHARS = 2000
FORGED_FORK = (
    "a RunForked from the inbox is refused: the orchestrator builds it itself from a fork "
    "request (`contreact fork`), right after the copied prefix it checked"
)


def rejection(state: AgentState, message: InboxMessage, now: datetime, reason: str) -> TaskFailed:
    """The failure of the task ``state`` waits on (the cycle's, or the open one the
    message answers), caused by ``message``."""
    task_id = state.pending_task_id or ""
    send = None
    open_task = state.open_task(message.causation_id)
    if open_task is not None:
        task_id, send = open_task.task_id, open_task.sends
    return TaskFailed(
        event_id=message.msg_id,
        run_id=state.run_id,
        ts=now,
        causation_id=task_id,
        correlation_id=state.run_id,
        task_id=task_id,
        cause="rejected",
        reason=reason[:MAX_REASON_CHARS],
        send=send,
    )


def dead_letter(message: InboxMessage, reason: str) -> dict[Any, Any]:
    """The dead-letter entry that keeps the refused message with its reason."""
    return {
        "stream": "orchestrator",
        "reason": f"rejected: {reason[:MAX_REASON_CHARS]}",
        **{f"field:{k}": v for k, v in message_to_fields(message).items()},
    }


async def keep_refused(redis: aioredis.Redis, message: InboxMessage, reason: str) -> None:
    """Keep a refused message in the dead letters, with why."""
    log.error("run %s: %s", message.run_id, reason)
    entry = dead_letter(message, reason)
    await redis.xadd(DEAD_LETTER_STREAM, entry, maxlen=10_000, approximate=True)
