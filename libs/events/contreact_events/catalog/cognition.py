"""Cognition events (seed 002, issue 17): the analysis of an operator exchange.

An exchange (the agent's ``send_message_to_operator`` and the operator's reply) is
complete when the reply is given back to the model. With ``cognition.analysis`` on,
``OperatorMessageAnalysisRequested`` records it right before that ``ToolCallCompleted``.
With ``heuristic`` the core derives ``OperatorMessageAnalyzed`` at once; with ``model``
the request opens a task that does not hold the cycle: its answer is accepted
whenever it arrives (the run's next cycles go on meanwhile) and ``RunCompleted`` waits
until none is open. A model answer that is not an analysis, or a task that keeps
failing, ends with the heuristic's analysis and the reason beside it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from contreact_events.catalog.analysis import Analysis, Exchange
from contreact_events.catalog.envelope import EventBase, InputEvent


class LoggedAnalysis(Analysis):
    """An ``Analysis`` as the log holds it: checked when it was made (a model's answer
    strictly, by ``parse_model_analysis``), read back from JSON and inbox data (lists
    for tuples) without strict mode."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class OperatorMessageAnalysisRequested(EventBase):
    """An exchange is complete and will be analysed (``analyser``: how)."""

    type: Literal["OperatorMessageAnalysisRequested"] = "OperatorMessageAnalysisRequested"
    task_id: str
    """The analysis' own id (``{tool task}/analysis``): the task, when the model analyses."""
    exchange_task_id: str
    """The operator tool call whose message and reply the exchange is."""
    cycle: int
    exchange: Exchange
    recent: tuple[Exchange, ...] = ()
    """The earlier exchanges its context type is judged against (newest last)."""
    analyser: Literal["heuristic", "model"]


class OperatorMessageAnalyzed(InputEvent):
    """An exchange's analysis: a worker's answer to the analysis task (input), or
    decided by the core (the heuristic, asked for or standing in for a task that kept
    failing). ``causation_id`` of an answer is its task."""

    type: Literal["OperatorMessageAnalyzed"] = "OperatorMessageAnalyzed"
    task_id: str
    analysis: LoggedAnalysis
    fallback_reason: str | None = None
    """Why the heuristic stands in for the model (its answer rejected, no answer), or
    None (the analyser that was asked for answered)."""
