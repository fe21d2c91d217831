"""The rows of the read models, and the ``Delta`` of one batch of events: what the
projector changed, for the store to write in one transaction.

A row that a page shows as it is has its shape declared once, in ``models/`` (the
JSON contracts): a cycle is a ``CycleView``, an operator exchange an
``OperatorExchange``, a regeneration attempt a ``RegenerationAttempt``. The projector
starts them with the values below and updates them in place while it folds a batch.
A run's row is the core's ``RunSummary`` (the CLI's and the Redis listing's figures,
one function computes them) beside what only the dashboard keeps (``Delta``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple

from contreact_events.catalog import Event
from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.diversity.search_texts import SearchText
from contreact_events.history.run_summary import RunSummary
from contreact_ui.models import CycleView, HistoryCut, OperatorExchange, RegenerationAttempt

PROJECTION_VERSION = 6
"""Raise this whenever a table's shape or meaning changes: the store then rebuilds."""

ChangeKind = Literal["added", "changed", "deleted"]
WrittenBy = Literal["agent", "platform"]
"""Who made a memory change: the agent's own tool call, or the platform's memory policy
(``PersistentMemoryStored``)."""


class Entry(NamedTuple):
    """One log entry to project: its stream id (None from an archive), the event, and
    the JSON it was stored as (kept as the payload instead of encoding it again)."""

    entry_id: str | None
    event: Event
    raw: bytes | None


def new_cycle(number: int) -> CycleView:
    """A cycle's row before anything happened in it."""
    return CycleView(
        cycle=number,
        started_at=None,
        ended_at=None,
        ended_by=None,
        advisory=None,
        advisory_level=None,
        metrics=CycleMetrics(),
        tools={},
        reflection=None,
        reflection_complete=True,
        level=None,
        max_similarity=None,
        most_similar_cycle=None,
        advisory_given=None,
        note="",
        topic_exhausted=False,
    )


def new_exchange(
    task_id: str, cycle: int, message: str, sent_at: datetime, seq: int
) -> OperatorExchange:
    """A message to the operator (sent at log position ``seq``), not answered yet."""
    return OperatorExchange(
        task_id=task_id,
        cycle=cycle,
        message=message,
        sent_at=sent_at,
        reply=None,
        replied_by=None,
        replied_at=None,
        sent_seq=seq,
    )


def new_attempt(
    cycle: int,
    attempt: int,
    text: str,
    similarity: float,
    is_unique: bool,
    feedback: str,
    matches: int,
    paragraphs: int,
) -> RegenerationAttempt:
    """A reflection's paragraphs as checked (later events decide the outcome)."""
    return RegenerationAttempt(
        cycle=cycle,
        attempt=attempt,
        text=text,
        similarity=similarity,
        is_unique=is_unique,
        feedback=feedback,
        matches=matches,
        paragraphs=paragraphs,
        outcome="checked",
    )


class MemoryChange(NamedTuple):
    seq: int
    cycle: int
    key: str
    change: ChangeKind
    value: str | None
    written_by: WrittenBy = "agent"


class EventRow(NamedTuple):
    """A row of the ``events`` table, its columns in order (the store writes it as it
    is)."""

    run_id: str
    seq: int
    entry_id: str | None
    type: str
    ts: str
    """The event's time as stored (ISO 8601)."""
    cycle: int
    task_key: str | None
    """The task this event belongs to: a request and its answer share it."""
    payload: bytes


BAND_WIDTH = 20
"""A long run's similarity band: each cycle against the reflections of the
``BAND_WIDTH`` cycles before it."""


@dataclass
class CycleMark:
    """What the long-run pages look up per cycle without reading the event log: where
    the cycle starts (the replay's cycle picker), whether its reflection was embedded,
    and its row of the similarity band (rounded to 3 places; None where none)."""

    start_seq: int | None = None
    embedded: bool = False
    band: list[float | None] | None = None


class Snapshot(NamedTuple):
    seq: int
    cycle: int
    state: bytes
    """zlib-compressed JSON of the fold's state after this event."""


@dataclass
class Delta:
    """What one batch of events changed, for the store to write in one transaction."""

    run_id: str
    summary: RunSummary
    """The run's summary after the batch (``run_summary`` of the fold's state)."""
    last_entry_id: str | None
    memory_keys: int = 0
    created_at: datetime | None = None
    """The first event's time."""
    updated_at: datetime | None = None
    """The last event's time."""
    cycles: dict[int, CycleView] = field(default_factory=dict)
    similarities: list[tuple[int, int, float]] = field(default_factory=list)
    memory: list[MemoryChange] = field(default_factory=list)
    operator: dict[str, OperatorExchange] = field(default_factory=dict)
    attempts: dict[tuple[int, int], RegenerationAttempt] = field(default_factory=dict)
    events: list[EventRow] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    marks: dict[int, CycleMark] = field(default_factory=dict)
    texts: list[SearchText] = field(default_factory=list)
    """What the search page searches (a reflection again once its vector is logged)."""
    cuts: dict[int, HistoryCut] = field(default_factory=dict)
    """Per cycle, where its prompts left part of the history out (``history_cuts``)."""

    @property
    def empty(self) -> bool:
        return not self.events
