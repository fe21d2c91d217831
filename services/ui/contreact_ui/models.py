"""The JSON contracts of the dashboard: every page is one of these, as JSON at its
``.json`` path and as HTML at its plain path (rendered from the same object).

The rows that pages show as the read models hold them (a run, a cycle, an operator
exchange, a regeneration attempt) are declared once, here, as dataclasses: the
projector (``read_models``) builds them and updates them in place as it folds a run's
events, the store writes them, and the pages carry them. Dataclasses, not models,
because the fold writes their attributes once per event or so, which is the rebuild's
hot path, and a dataclass's attribute write is several times cheaper than a model's;
pydantic validates, serializes and documents them as it does models
(``__pydantic_config__``), with the same JSON schema. Build them from untrusted or
stored values through a ``TypeAdapter`` (which validates), not their constructor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contreact_events.catalog.analysis import ContextType, Intent
from contreact_events.catalog.cycle import CycleMetrics
from contreact_ui.assessments import AssessmentRow, Table2Live


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


ROW_CONFIG = ConfigDict(extra="forbid")
"""The config of the row dataclasses (as ``_Model``'s, but mutable)."""


@dataclass
class RunFields:
    # What the listing shows of a run, and what the projector's run summary holds
    # (``read_models.RunSummary`` adds the fold's phase; ``RunRow`` adds where the log
    # was read). Not in the schema itself: its fields are, in RunRow.
    __pydantic_config__ = ROW_CONFIG

    run_id: str
    status: str
    """new, checking, running, waiting_operator, completed, failed, cancelled; or
    quarantined / unreadable for a run whose log cannot be projected."""
    model: str
    resolved_model: str
    """The model that answered (differs from ``model`` when ``auto`` fell back)."""
    backend: str
    """The backend that ran (ollama, embedded, scripted), once resolved."""
    experiment: str
    cycle: int
    cycle_count: int
    step: int
    """LLM calls in the current cycle."""
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    events: int
    memory_keys: int
    failure_reason: str
    created_at: datetime | None
    updated_at: datetime | None


@dataclass
class RunRow(RunFields):
    """One run as the listing shows it."""

    source: str
    """Where the projection read the log: redis or archive."""
    projection_error: str | None


RunSort = Literal[
    "run_id",
    "status",
    "model",
    "backend",
    "experiment",
    "cycle",
    "step",
    "llm_calls",
    "tokens",
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
    analyser produced it. The field meanings are ``contreact_events.catalog.analysis``'s."""

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


class ChartCycle(_Model):
    """A cycle's figures as the run page's charts draw them."""

    cycle: int
    ended_by: str | None
    """None while the cycle runs, or when the run stopped in it."""
    level: str | None
    tools: dict[str, int]
    metrics: CycleMetrics


class CycleWindow(_Model):
    """Which cycles a long run's page shows in full (its tables and reflections)."""

    first: int
    last: int
    size: int
    """Cycles a page shows (``from_cycle`` picks the page)."""
    cycles: int
    """The run's cycles in all."""


class RunPage(_Model):
    run: RunRow
    cycles: list[CycleView]
    """The cycles of ``window`` in full (all of them, up to ``window.size``)."""
    window: CycleWindow
    chart: list[ChartCycle]
    """Every cycle's figures, for the charts."""
    similarity: SimilarityMatrix
    operator: list[OperatorExchange]
    """The operator exchanges of the cycles of ``window``, each with its analysis."""
    regenerations: list[RegenerationAttempt]
    config: dict[str, Any] | None
    """The run's effective configuration (from RunStarted, else RunRequested)."""
    exports: list[Link]
    assessments: list[AssessmentRow] = []
    """Its assessments by evaluator models (``contreact assess``), as recorded."""
    assessments_note: str | None = None
    operator_total: int = 0
    """The run's operator exchanges in all (``operator`` holds the window's)."""


class MemoryEntry(_Model):
    key: str
    value: str | None
    """None for a key deleted in the cycle shown."""
    change: Literal["added", "changed", "deleted"] | None
    """What happened to the key in the cycle shown (None: unchanged)."""
    last_changed_cycle: int
    persistent: bool = False
    """The key lies under the memory policy's reserved prefix (``PERSISTENT_PREFIX``):
    the platform wrote it from an exchange's analysis, not the agent."""


class MemoryPage(_Model):
    run_id: str
    cycle: int
    """Memory as it stood at the end of this cycle (0: before the first)."""
    cycles: list[int]
    entries: list[MemoryEntry]
    """Keys present at the end of the cycle, and those deleted during it."""
    keys: int


class EventRowView(_Model):
    seq: int
    type: str
    ts: datetime
    cycle: int
    task_key: str | None
    summary: str
    payload: dict[str, Any] | None = None
    """The whole event (current schema version), in the event log's listing."""
    duration_s: float | None = None
    """On the answer to a task (an LLM call's response, a tool's result, a reply): the
    seconds since the task's first event, its request."""


class TypeCount(_Model):
    type: str
    count: int


class EventFilters(_Model):
    type: list[str] = Field(default_factory=list)
    cycle: int | None = None
    after: int = 0
    """Show events after this position in the log."""
    limit: int = 200


class EventsPage(_Model):
    run_id: str
    events: list[EventRowView]
    total: int
    """Events matching the filters."""
    types: list[TypeCount]
    filters: EventFilters
    next_after: int | None
    """Pass as ``after`` for the next page (None: this is the last)."""
    last_cycle: int = 0
    """The run's highest cycle (the log is paged by cycle from 0, before the first, to
    this)."""
    by_cycle: bool = False
    """True when a long run's log opened a cycle at a time (no cycle, position or limit
    was asked for)."""


class EventDetail(_Model):
    run_id: str
    event: EventRowView
    entry_id: str | None
    payload: dict[str, Any]
    """The event at its current schema version (older stored shapes are upcast)."""
    related: list[EventRowView]
    """Events of the same task: a prompt and its answer, a tool call and its result."""
    previous: int | None
    next: int | None


class PromptMessage(_Model):
    role: str
    content: str
    tool_calls: list[dict[str, Any]]
    tool_name: str | None


class ReplayPage(_Model):
    run_id: str
    seq: int
    """Position in the log: the state after this many events."""
    total: int
    event: EventRowView | None
    status: str
    phase: str
    cycle: int
    step: int
    advisory: str | None
    """The diversity advisory in force."""
    next_advisory: str | None
    memory: list[MemoryEntry]
    """Memory after ``seq``: every key with ``all_memory``, else the keys changed in the
    cycle and the latest changed before, up to ``MEMORY_SHOWN``."""
    memory_total: int = 0
    """How many keys (deleted in the cycle included) memory has after ``seq``."""
    prompt: list[PromptMessage]
    """The messages the next LLM call is (or the last one was) sent: all of them with
    ``all_messages``, else the system prompt and the latest ``PROMPT_SHOWN``."""
    prompt_total: int = 0
    """How many messages the prompt has in all."""
    prompt_is_next: bool
    """True when the run is about to call the model or waits for its answer."""
    metrics: CycleMetrics
    """The cycle in progress so far."""
    cycle_metrics: list[CycleMetrics]
    """Every ended cycle."""
    pending_task: str | None
    cycle_starts: list[list[int]]
    """[cycle, seq of its CycleStarted] for jumping to a cycle."""
    operator: list[OperatorExchange] = Field(default_factory=list)
    """The latest ``EXCHANGES_SHOWN`` operator exchanges by ``seq``, each with its
    analysis as it stood then."""
    operator_total: int = 0
    """The operator exchanges sent by ``seq``."""


class Table1Row(_Model):
    metric: str
    label: str
    ours: list[float | None]
    """Per group: the mean over its completed runs (None: no completed run)."""
    sd: list[float | None] = Field(default_factory=list)
    """Per group: the sample standard deviation (n - 1; None below two runs)."""
    low: list[float | None] = Field(default_factory=list)
    high: list[float | None] = Field(default_factory=list)
    """Per group: the range over its completed runs."""
    n: list[int] = Field(default_factory=list)
    """Per group: how many completed runs the figures are over."""
    paper: list[float | None]


class CompareGroup(_Model):
    label: str
    runs: list[str]
    models: list[str]
    """The models that ran (the configured one where nothing else ran)."""
    configured_models: list[str] = Field(default_factory=list)
    """The models the runs' configs named."""
    cycle_counts: list[int] = Field(default_factory=list)
    """The distinct cycle counts of the group's runs (the paper's runs have 10)."""
    left_out: list[str] = Field(default_factory=list)
    """Runs not in Table 1's figures (not completed), each as ``run_id (status)``."""


class CycleSeries(_Model):
    label: str
    cycles: list[int]
    values: dict[str, list[float | None]]
    """metric -> value per cycle (a group's mean over its runs)."""


class PaperTable2(_Model):
    evaluators: list[str]
    histories: dict[str, list[float | None]]
    inter_rater_correlation: float | None


class ComparePage(_Model):
    by: Literal["model", "run", "experiment"]
    selected_runs: list[str]
    selected_models: list[str]
    experiment: str | None
    groups: list[CompareGroup]
    table1: list[Table1Row]
    table1_warnings: list[str] = Field(default_factory=list)
    """Why these figures and the paper's do not compare one to one (cycle counts other
    than the paper's, runs left out, substituted models)."""
    paper_columns: list[str]
    series: list[CycleSeries]
    metrics: dict[str, str]
    """metric -> label of the per-cycle charts."""
    available_models: list[str]
    available_experiments: list[str]
    available_runs: list[str]
    table2: PaperTable2
    assessments_available: bool
    """True once the event catalog has assessment records (``RunAssessed``)."""
    citation: str
    assessments: Table2Live | None = None
    """Table 2 of these runs, from their assessment records."""


class ComposePage(_Model):
    mode: str
    modes: list[str]
    """The modes this server composes: ``run`` and ``experiment``."""
    command: str
    """The CLI command that runs the composed file."""
    values: dict[str, str]
    yaml: str | None
    error: str | None
    download: str | None
    """URL of the composed YAML as a download (a GET: nothing is stored)."""
    filename: str
    started_from: str | None = None
    """The run whose config the form opened with (``/compose?from=RUN``)."""


class Health(_Model):
    ok: bool
    projection_version: str
    runs: int
    following: int
