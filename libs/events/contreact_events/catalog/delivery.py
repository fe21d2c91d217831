"""Delivery events: a task the run waits on that got no usable answer, and its retry.

Every task has a deadline (``RunConfig.deadlines``). A task that expires, is
dead-lettered by its worker's stream, or whose result the core cannot accept comes
back to its run as ``TaskFailed``; the run sends it again (``TaskRetried``) within
its budget, then fails with the reason. An embedding that keeps failing ends its
cycle without an assessment instead, as ``EmbeddingFailed`` does; an operator wait
that expires is answered with the policy reply.
"""

from __future__ import annotations

from typing import Literal

from contreact_events.catalog.envelope import EventBase, InputEvent

FailureCause = Literal["expired", "dead_lettered", "rejected"]


class TaskFailed(InputEvent):
    """Input: the task ``task_id`` will not be answered (orchestrator timer, a
    worker's dead-letter path, or the orchestrator refusing its result)."""

    type: Literal["TaskFailed"] = "TaskFailed"
    task_id: str
    cause: FailureCause
    reason: str
    """What happened, worded for the person reading ``contreact show``."""
    send: int | None = None
    """Which send of the task failed (None: whichever is current). A failure of an
    earlier send, arriving late, is ignored."""


class TaskRetried(EventBase):
    """The failed task is sent again, with a new deadline."""

    type: Literal["TaskRetried"] = "TaskRetried"
    task_id: str
    send: int
    """The send this is: 2 for the first retry."""
    reason: str
