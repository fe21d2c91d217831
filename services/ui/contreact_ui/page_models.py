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


class ExperimentPage(_Model):
    experiment: str
    design: ExperimentDesign
    replicas: list[ReplicaRow]
    statuses: dict[str, int]
    """status -> replicas in it."""
    downloads: list[Link]
