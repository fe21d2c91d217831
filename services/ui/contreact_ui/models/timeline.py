"""The JSON contract of the timeline page (``/runs/{run_id}/timeline``): a cycle's
tasks from request to answer, and where each cycle's time went. Beside ``models.py``,
which holds the other pages' contracts."""

from __future__ import annotations

from typing import Literal

from contreact_ui.models import _Model


class Span(_Model):
    """One task of a cycle on the timeline: from its request to its answer."""

    kind: Literal["llm", "tool", "operator", "embedding", "other"]
    label: str
    """What it was: the LLM call's step, the tool's name (agent text: escaped), ..."""
    start_s: float
    """Seconds from the cycle's start to the request."""
    duration_s: float | None
    """Seconds from the request to the answer; None while it waits for one."""
    seq: int
    """The request's position in the log."""
    ok: bool
    """False for a failed LLM call, a refused tool call, or a task a failed or
    cancelled run left unanswered."""


class CycleTime(_Model):
    """Where a cycle's time went (seconds)."""

    cycle: int
    total_s: float | None
    """From CycleStarted to CycleEnded (None: not ended)."""
    llm_s: float
    tool_s: float
    operator_s: float
    """Waiting for the operator's reply."""
    other_s: float
    """The rest: orchestration, embedding, queues."""


class TimelinePage(_Model):
    run_id: str
    cycle: int
    """The cycle shown call by call."""
    cycles: list[int]
    spans: list[Span]
    extent_s: float
    """Seconds from the cycle's start to its end or its last answer (the track's width)."""
    time: CycleTime
    by_cycle: list[CycleTime]
    """Every cycle's split, for the chart of the whole run."""
