"""History compaction (``history.policy: compact``): the run asks a model to summarise
the older part of its history; the answer (``LLMResponded`` to this request's task)
stands for that part in every later prompt."""

from __future__ import annotations

from typing import Literal

from contreact_events.catalog.envelope import EventBase


class HistoryCompactionRequested(EventBase):
    """Derived at the start of a cycle when the history not yet summarised passed the
    threshold: the task that asks for the summary. The answer is the run's
    ``LLMResponded`` to ``task_id``; a failure is retried as any task's."""

    type: Literal["HistoryCompactionRequested"] = "HistoryCompactionRequested"
    task_id: str
    cycle: int
    """The cycle that starts once the summary is in."""
    upto: int
    """The history messages ``[0, upto)`` the summary stands for (the last summary's
    too); the prompts carry ``[upto, ...)`` whole."""
    messages: int
    """How many messages the history held when it was asked for."""
    model: str
    """The model asked (``history.model``, else the run's)."""
