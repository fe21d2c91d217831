"""The JSON contracts of the experiment page and the search page (the other pages'
are in ``models.py``, with the conventions they share)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from contreact_events.diversity.search_texts import TextKind
from contreact_ui.models import ROW_CONFIG, Link, _Model


class SearchFilters(_Model):
    q: str
    mode: Literal["keyword", "semantic"] = "keyword"
    kind: list[TextKind] = Field(default_factory=list)
    """Only these kinds of text (reflection, memory, operator, reply, tool); all if empty."""
    run: str | None = None
    experiment: str | None = None
    limit: int = 50


class SearchHit(_Model):
    run_id: str
    cycle: int
    seq: int
    """The event that holds the text (``/runs/RUN/events/SEQ``)."""
    kind: str
    label: str
    """The memory key, the tool's name, who replied; empty for the other kinds."""
    before: str
    match: str
    """The matched words (keyword), or the start of the text (semantic)."""
    after: str
    score: float | None
    """Cosine similarity to the query (semantic search only)."""
    persistent: bool = False
    """A memory value under the memory policy's reserved prefix (``PERSISTENT_PREFIX``)."""


SearchModelState = Literal["not loaded", "loading", "ready", "unavailable"]


class SearchPage(_Model):
    filters: SearchFilters
    hits: list[SearchHit]
    total: int
    """Texts that match (keyword), or texts ranked (semantic)."""
    searched: int
    """Texts searched, over ``runs`` runs."""
    runs: int
    kinds: dict[str, str]
    """kind -> what it is, for the form."""
    search_model: SearchModelState = "not loaded"
    """Semantic search's embedding model: loaded at the dashboard's start in the
    background (``loading`` meanwhile; a semantic search waits for it)."""
    search_model_problem: str | None = None
    """Why the model cannot be loaded (``unavailable``)."""


@dataclass
class RunAttempt:
    __pydantic_config__ = ROW_CONFIG

    run_id: str
    attempt: int
    status: str


class ReplicaRow(_Model):
    replica: str
    """The replica's name: LABEL-LETTER."""
    label: str
    letter: str
    condition: str | None = None
    """The experiment's condition the replica runs under (``conditions:``), if any."""
    model: str
    """The configured model."""
    resolved_model: str
    """The model that ran (differs when one was substituted)."""
    run_id: str
    """The replica's current run (its last attempt)."""
    attempts: list[RunAttempt]
    status: str
    cycle: int
    cycle_count: int
    last_advisory: str
    """The last similarity assessment: level, similarity, most similar cycle."""
    siblings: list[str]
    """The other replicas' runs of the same model."""
    log_problem: str | None = None
    """Why its log cannot be read past some point (what is shown was read before it):
    the run is left out of Table 1 and of the downloads, and named there."""


class ForkRow(_Model):
    """A fork of one of the experiment's replicas."""

    name: str
    """Its parent replica and target: ``A-A -> B``."""
    group: str
    """Its group in the tables: ``A -> B at K`` (a fork made outside the experiment's
    file: ``A-A -> B at K``, in none of them)."""
    made_by: Literal["experiment", "fork"]
    """The experiment file's ``fork`` section, or ``contreact fork`` (a run that names
    the experiment, inherited from its parent, but is not one of its runs)."""
    parent_run_id: str
    at_cycle: int
    target: str
    """The label of the model it runs (else that model)."""
    model: str
    resolved_model: str
    run_id: str
    status: str
    cycle: int
    cycle_count: int
    earlier: list[str] = Field(default_factory=list)
    """Forks of its parent replica's earlier attempts."""


class ForkDesign(_Model):
    """The experiment file's ``fork`` section, as its forks show it."""

    at_cycle: list[int]
    cycle_count: list[int]
    from_labels: list[str]
    to: list[str]
    groups: list[str]
    """``A -> B at K``, one per direction."""
    runs: int


class ExperimentDesign(_Model):
    models: list[str]
    """The labels, in the order the runs name them."""
    replicas: list[str]
    """The letters."""
    shared: dict[str, Any]
    """Settings (dotted keys) every run has alike, where they are not the default (the
    cycles and the backend always)."""
    at_default: int
    """Settings every run has alike at their default (not listed)."""
    per_model: dict[str, dict[str, Any]]
    """label -> the settings its runs share and other models' runs do not."""
    per_replica: list[str]
    """Settings that differ between replicas of one model (a seed offset, ...)."""
    fork: ForkDesign | None = None
    """The ``fork`` section (None: the experiment's file has none, or no fork ran yet)."""


class SelfReportChart(_Model):
    model: str
    """The model's label (without the condition)."""
    svg: str
    """Each run's accepted scores in call order, a colour per condition (inline SVG,
    made by ``contreact_analysis.report.self_reports.per_call_charts``)."""


class SelfReports(_Model):
    """An experiment's self-reports by condition: what ``contreact conditions EXP
    --json`` prints (``stats.conditions.condition_summary``: the means per model and
    condition with their t intervals over runs, each condition against the baseline
    by a permutation test over runs and a mixed model), and each run's scores call by
    call."""

    reports: int
    valid_reports: int
    means: list[dict[str, Any]]
    contrasts: list[dict[str, Any]]
    charts: list[SelfReportChart] = Field(default_factory=list)


class ExperimentPage(_Model):
    experiment: str
    design: ExperimentDesign
    replicas: list[ReplicaRow]
    forks: list[ForkRow] = Field(default_factory=list)
    """The forks of its replicas: its file's, then any made outside it."""
    statuses: dict[str, int]
    """status -> replicas in it."""
    downloads: list[Link]
    left_out: list[str] = Field(default_factory=list)
    """The runs whose logs cannot be read, each with why: left out of ``exports.zip``
    (its ``LEFT_OUT.txt`` names them) and of Table 1 (``table1.csv`` names them)."""
    self_reports: SelfReports | None = None
    """With conditions and self-reports: the statistics by condition (None: none)."""
