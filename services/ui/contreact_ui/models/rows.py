"""The dashboard's row types and the base of its page models (see the package's
docstring).

The rows of the ``cycles``, ``operator`` and ``attempts`` tables are the page types
``CycleView``, ``OperatorExchange`` and ``RegenerationAttempt``, updated in place while
a batch is folded; the run summary (``RunSummary``) is the listing's ``RunFields`` plus
the fold's phase. They are dataclasses that pydantic validates, serializes and
documents as it does models (the same JSON schema): the fold writes their attributes
about once per event, and a pydantic model's attribute write (and ``model_construct``)
costs several times a dataclass's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.catalog.exchange import ContextType, Intent
from contreact_events.history.run_summary import RunSummary


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


ROW_CONFIG = ConfigDict(extra="forbid")
"""The config of the row dataclasses (as ``_Model``'s, but mutable)."""


class RunRow(RunSummary):
    """One run as the listing shows it: its summary (``contreact_events.history.run_summary``:
    the fields ``contreact runs --json`` prints, computed by the same function), and what
    only the dashboard keeps."""

    memory_keys: int
    """Keys in the run's memory after its last event."""
    created_at: datetime | None
    """Its first event's time."""
    updated_at: datetime | None
    """Its last event's time."""
    source: str
    """Where the projection read the log: redis or archive."""
    projection_error: str | None

    @property
    def log_cut_short(self) -> bool:
        """Its log could not be read (or folded) to its end: what is projected stops at
        the problem (``projection_error``). A quarantined run's reason is there too, but
        its log was read whole: it is not cut short."""
        return bool(self.projection_error) and self.status != "quarantined"

    @property
    def cut_short_reason(self) -> str:
        """The words every page and download names such a run with."""
        return f"its log cannot be read ({self.projection_error})"


RunSort = Literal[
    "run_id",
    "status",
    "model",
    "backend",
    "host",
    "experiment",
    "cycle",
    "step",
    "llm_calls",
    "tokens",
    "cost",
    "memory_keys",
    "created_at",
    "updated_at",
]
"""What the runs list can be ordered by: each of its columns."""


class RunFilters(_Model):
    status: str | None = None
    model: str | None = None
    backend: str | None = None
    experiment: str | None = None
    q: str | None = None
    """Substring of the run id."""
    since: date | None = None
    """Runs created on or after this day (UTC)."""
    until: date | None = None
    """Runs created on or before this day (UTC)."""
    sort: RunSort = "created_at"
    """The column the runs are ordered by (any column of the table)."""
    order: Literal["asc", "desc"] = "desc"
    limit: int = 1000
    offset: int = 0


class FilterOptions(_Model):
    status: list[str]
    model: list[str]
    backend: list[str]
    experiment: list[str]


class RunsPage(_Model):
    runs: list[RunRow]
    total: int
    """Runs matching the filters (``runs`` holds one page of them)."""
    filters: RunFilters
    options: FilterOptions


@dataclass
class HistoryCut:
    """Where a cycle's prompts left part of the run's history out (``history:
    truncate``) or carried it as a summary (``history: compact``): derived from the log,
    each model call's prompt being the history cut by the run's policy
    (``contreact_events.core.compaction.window``), so it is what the model was sent."""

    __pydantic_config__ = ROW_CONFIG

    cycle: int
    kind: Literal["truncated", "summarised"]
    """truncated: the messages left out were not sent; summarised: a summary of them
    was sent in their place."""
    seq: int
    """The log position of the cycle's first model call that left messages out."""
    first_left_out: int
    """Messages 1 to this of the history that call left out."""
    last_left_out: int
    """The same for the cycle's last model call."""
    messages: int
    """The history's length (after the system message) at the cycle's last call."""
    calls: int
    """The cycle's model calls that left messages out."""
    compaction_seq: int | None = None
    """The log position of the compaction asked for just before the cycle, if one was
    (``HistoryCompactionRequested``)."""
    compaction_model: str | None = None


@dataclass
class CycleView:
    __pydantic_config__ = ROW_CONFIG

    cycle: int
    started_at: datetime | None
    ended_at: datetime | None
    ended_by: str | None
    advisory: str | None
    """The advisory this cycle received (in force during it)."""
    advisory_level: str | None
    metrics: CycleMetrics
    tools: dict[str, int]
    """Tool calls by tool (made-up tools counted as ``(unknown tool)``)."""
    reflection: str | None
    reflection_complete: bool
    level: str | None
    """This cycle's own similarity assessment: high, moderate or none."""
    max_similarity: float | None
    most_similar_cycle: int | None
    advisory_given: str | None
    """The advisory this cycle's assessment gave the next cycle."""
    note: str
    topic_exhausted: bool


class SimilarityMatrix(_Model):
    cycles: list[int]
    """The cycles whose reflection was embedded."""
    view: Literal["matrix", "band"] = "matrix"
    """``matrix`` up to ``MATRIX_MAX_CYCLES`` reflections; past that ``band``: each cycle
    against the ``band_width`` cycles before it (a long run's square is unreadable)."""
    values: list[list[float | None]]
    """matrix: cosine similarity of cycle i's reflection to cycle j's (symmetric; None
    where a cycle was not embedded). band: empty."""
    band_width: int = 0
    band: list[list[float | None]] = Field(default_factory=list)
    """band: row k (0-based) holds, for each of ``cycles``, its similarity to the
    reflection k + 1 cycles before it (None where there is none)."""
    high_threshold: float
    moderate_threshold: float


class ExchangeAnalysis(_Model):
    """An exchange's analysis as the run log records it (``OperatorMessageAnalyzed``):
    what the operator's reply is, how it relates to the recent exchanges, and which
    analyser produced it. The field meanings are ``contreact_events.catalog.exchange``'s."""

    intent: Intent
    """question | request | statement | conversation."""
    context_type: ContextType
    """new | continuation | clarification | related."""
    confidence: float
    persistence_score: float
    """How much the exchange is worth keeping in persistent memory, 0 to 1."""
    summary: str
    relevant_memories: list[str]
    """Keys of the run's memories relevant to the exchange, most relevant first."""
    reasoning: str
    analyser: Literal["heuristic", "model"]
    """The analyser that produced it."""
    fallback_reason: str | None = None
    """Why the heuristic stood in for the model that was asked (None: it answered)."""
    platform_memories: list[str] = []
    """The relevant memories whose value the platform's memory policy wrote (when the
    analysis was made), not the agent: marked persistent beside the exchange."""


AnalysisStatus = Literal["analysed", "awaiting", "not requested"]


@dataclass
class OperatorExchange:
    __pydantic_config__ = ROW_CONFIG

    task_id: str
    cycle: int
    message: str
    sent_at: datetime
    reply: str | None
    replied_by: str | None
    replied_at: datetime | None
    sent_seq: int = 0
    """Log positions (the replay page shows an exchange as it stood at any event)."""
    replied_seq: int | None = None
    analysis_requested: Literal["heuristic", "model"] | None = None
    """The analyser asked for, once the exchange was complete (None: not asked: the
    reply is not given back yet, or the run's ``cognition.analysis`` is off)."""
    analysis_requested_seq: int | None = None
    analysis: ExchangeAnalysis | None = None
    """The analysis, once recorded (None with ``analysis_requested``: awaiting it)."""
    analysis_seq: int | None = None
    analysis_status: AnalysisStatus = "not requested"
    """analysed; awaiting (asked for, not recorded yet); not requested (``analysis_of``)."""


def analysis_status(exchange: OperatorExchange) -> AnalysisStatus:
    """Where an exchange's analysis stands, from its fields."""
    if exchange.analysis is not None:
        return "analysed"
    return "awaiting" if exchange.analysis_requested is not None else "not requested"


@dataclass
class RegenerationAttempt:
    __pydantic_config__ = ROW_CONFIG

    cycle: int
    attempt: int
    text: str
    similarity: float
    is_unique: bool
    feedback: str
    matches: int
    paragraphs: int
    outcome: str
    """checked, regenerated, accepted or accepted (relaxed)."""


class Link(_Model):
    label: str
    href: str
