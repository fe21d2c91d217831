"""The dashboard's pages as JSON contracts (see the package's docstring)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from contreact_events.catalog.cycle import CycleMetrics
from contreact_ui.models.assessments import AssessmentRow, Table2Live
from contreact_ui.models.rows import (
    CycleView,
    HistoryCut,
    Link,
    OperatorExchange,
    RegenerationAttempt,
    RunRow,
    SimilarityMatrix,
    _Model,
)


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


class SettingChange(_Model):
    """A setting a fork changed: its dotted path (``model_name``,
    ``diversity.moderate_threshold``) and its value in the parent and in the fork."""

    key: str
    parent: Any
    fork: Any


class ForkOrigin(_Model):
    """Where a fork comes from (its ``RunForked`` event)."""

    parent_run_id: str
    at_cycle: int
    """The parent's cycle whose end the fork starts after (cycles 1 to it are the
    parent's, copied)."""
    parent_shown: bool
    """False when the dashboard does not hold the parent."""
    changes: list[SettingChange]
    question: str = ""
    """An interview (``contreact ask``): the researcher's question its first own cycle
    opened with (untrusted text); empty for a plain fork."""


class LiveChange(_Model):
    """One setting changed mid-run: its value before and after."""

    key: str
    old: Any
    new: Any


class SettingsChangeRow(_Model):
    """Settings of the run changed while it ran (``contreact set``, a
    ``SettingsChanged`` event of its log), by whom and why."""

    seq: int
    """Its position in the run's log (the change applies from the next decision on)."""
    at: datetime
    cycle: int
    """The cycle the run was in."""
    by: str
    reason: str
    changes: list[LiveChange]


class QueryRow(_Model):
    """A question asked of the run's model about the run (``contreact query``), recorded
    beside the run, never in its log."""

    at: datetime
    by: str
    model: str
    cycle: int
    """The cycle of the agent's last answer in the history the model was given."""
    question: str
    answer: str
    input_sha256: str


class ForkLink(_Model):
    """A fork of the run a page shows."""

    run_id: str
    at_cycle: int
    status: str
    changes: list[SettingChange]


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
    fork_of: ForkOrigin | None = None
    """The run's parent, when it is a fork."""
    forks: list[ForkLink] = []
    """The runs forked from this one that the dashboard holds."""
    queries: list[QueryRow] = []
    """The questions asked of the run's model about it (``contreact query``)."""
    settings_changes: list[SettingsChangeRow] = []
    """Settings changed while it ran (``contreact set``), in log order."""
    history_cuts: list[HistoryCut] = []
    """The cycles of ``window`` whose prompts left part of the history out (``history:
    truncate``) or carried it as a summary (``compact``)."""


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
    """Per group: the 95% interval of the mean over its completed runs (``method``), as
    the report's Table 1; None where there is none (below three runs, or no spread)."""
    no_interval: list[str | None] = Field(default_factory=list)
    """Per group: why there is no interval (None where there is one)."""
    method: str = "t"
    """The intervals' method: Student's t interval of the mean."""
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
    forks: str = "none"
    """How an experiment's forks are counted: ``none`` (left out), ``as-rows`` (each
    fork of the experiment's file a group ``A -> B at K`` of its own), ``only``."""


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
