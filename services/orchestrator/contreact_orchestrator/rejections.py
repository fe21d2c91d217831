"""A result the core cannot accept, turned into its task's failure.

The result of the task a run waits on may be unreadable (a corrupt payload, a vector
of the wrong size). It is not dropped: the run gets ``TaskFailed`` (cause
``rejected``), retried within its budget like any other failure, and the message is
kept in the dead letters with the reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contreact_events.catalog.delivery import TaskFailed
from contreact_events.core.state import AgentState
from contreact_events.wire.codec import message_to_fields
from contreact_events.wire.tasks import InboxMessage

MAX_REASON_CHARS = 2000


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
