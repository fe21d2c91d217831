"""The rows of the read models, and the ``Delta`` of one batch of events: what the
projector changed, for the store to write in one transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple

from contreact_events.catalog import Event
from contreact_events.catalog.cycle import CycleMetrics

PROJECTION_VERSION = 1
"""Raise this whenever a table's shape or meaning changes: the store then rebuilds."""


ChangeKind = Literal["added", "changed", "deleted"]


class Entry(NamedTuple):
    """One log entry to project: its stream id (None from an archive), the event, and
    the JSON it was stored as (kept as the payload instead of encoding it again)."""

    entry_id: str | None
    event: Event
    raw: bytes | None


@dataclass
class CycleRow:
    cycle: int
    started_at: datetime | None = None
    ended_at: datetime | None = None
    ended_by: str | None = None
    advisory: str | None = None
    """The advisory in force during this cycle (given by the previous assessment)."""
    advisory_level: str | None = None
    metrics: CycleMetrics = field(default_factory=CycleMetrics)
    tools: dict[str, int] = field(default_factory=dict)
    reflection: str | None = None
    reflection_complete: bool = True
    level: str | None = None
    """This cycle's own similarity assessment: high, moderate or none."""
    max_similarity: float | None = None
    most_similar_cycle: int | None = None
    advisory_given: str | None = None
    """The advisory this cycle's assessment gave the next cycle."""
    note: str = ""
    topic_exhausted: bool = False


class MemoryChange(NamedTuple):
    seq: int
    cycle: int
    key: str
    change: ChangeKind
    value: str | None


@dataclass
class OperatorRow:
    task_id: str
    cycle: int
    message: str
    sent_at: datetime
    reply: str | None = None
    replied_by: str | None = None
    replied_at: datetime | None = None


@dataclass
class AttemptRow:
    cycle: int
    attempt: int
    text: str
    similarity: float
    is_unique: bool
    feedback: str
    matches: int
    paragraphs: int
    outcome: str = "checked"
    """checked | regenerated | accepted | accepted (relaxed)"""


class EventRow(NamedTuple):
    seq: int
    entry_id: str | None
    type: str
    ts: datetime
    cycle: int
    task_key: str | None
    """The task this event belongs to: a request and its answer share it."""
    payload: bytes


class Snapshot(NamedTuple):
    seq: int
    cycle: int
    state: bytes
    """zlib-compressed JSON of the fold's state after this event."""


@dataclass
class RunSummary:
    run_id: str
    status: str = "new"
    phase: str = "new"
    model: str = ""
    resolved_model: str = ""
    backend: str = ""
    experiment: str = ""
    cycle: int = 0
    cycle_count: int = 0
    step: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    events: int = 0
    memory_keys: int = 0
    failure_reason: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class Delta:
    """What one batch of events changed, for the store to write in one transaction."""

    run_id: str
    summary: RunSummary
    last_entry_id: str | None
    cycles: dict[int, CycleRow] = field(default_factory=dict)
    similarities: list[tuple[int, int, float]] = field(default_factory=list)
    memory: list[MemoryChange] = field(default_factory=list)
    operator: dict[str, OperatorRow] = field(default_factory=dict)
    attempts: dict[tuple[int, int], AttemptRow] = field(default_factory=dict)
    events: list[EventRow] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.events
