"""The dashboard's read models, projected from a run log. Pure: no I/O, no clock.

A ``RunProjector`` folds a run's events as they are appended (the same ``fold`` the
orchestrator uses) and turns each batch into a ``Delta``: the rows of the read models
that changed. The store writes a delta in one transaction together with how far the
projector got in the log, so a batch is never half applied nor applied twice.

Read models (tables of ``store.py``):

* run summary (status, model, backend, cycle/step, tokens, memory keys, ...);
* per-cycle metrics, tool calls by tool, the advisory each cycle received, its
  similarity assessment and its reflection;
* the similarity matrix (every pair the assessments compared);
* memory changes (key added, changed, deleted, with the cycle and log position), from
  which memory at the end of any cycle, or at any event, is read;
* operator exchanges and regeneration attempts;
* the events themselves, indexed by type, cycle and task, for the log viewer;
* a snapshot of the fold's state at the start of every fifth cycle, so that the replay
  page folds at most five cycles of events.

``PROJECTION_VERSION`` names the shape of all of these: the store rebuilds itself from
the logs when the version it holds differs.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

import numpy as np
import orjson

from contreact_events.catalog import EVENT_CLASSES, Event
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleMetrics,
    CycleStarted,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ReflectionRecorded,
)
from contreact_events.catalog.diversity import (
    EmbeddingFailed,
    ParagraphsAccepted,
    ParagraphsChecked,
    ReflectionEmbedded,
    RegenerationRequested,
    SimilarityAssessed,
    TopicExhausted,
)
from contreact_events.catalog.run import (
    ModelChecked,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunRequested,
    RunStarted,
)
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.core.tools import ALL_TOOLS, SEARCH_TOOL
from contreact_events.exceptions import ContReActEventError
from contreact_events.wire.codec import bulk, event_to_json
from contreact_ui.exceptions import ProjectionError

PROJECTION_VERSION = 1
"""Raise this whenever a table's shape or meaning changes: the store then rebuilds."""

KNOWN_TOOLS = (*ALL_TOOLS, SEARCH_TOOL)
UNKNOWN_TOOL = "(unknown tool)"
"""Calls of tools the agent made up are counted under this name in the charts (their
names, agent text, stay in the event log)."""

SUMMARY_CHARS = 200
SNAPSHOT_EVERY = 5
"""Cycles between snapshots of the fold's state (taken at cycles 1, 6, 11, ...): the
replay page folds at most this many cycles of events from the nearest one."""

ChangeKind = Literal["added", "changed", "deleted"]

TASK_TYPES = frozenset(t for t, cls in EVENT_CLASSES.items() if "task_id" in cls.model_fields)
PROJECTED_TYPES = frozenset(
    {
        "CycleStarted",
        "ToolCallRequested",
        "ToolCallCompleted",
        "OperatorMessageSent",
        "OperatorReplied",
        "ReflectionRecorded",
        "SimilarityAssessed",
        "EmbeddingFailed",
        "ParagraphsChecked",
        "RegenerationRequested",
        "ParagraphsAccepted",
        "TopicExhausted",
        "CycleEnded",
    }
)
"""The event types ``_project`` has a branch for (the others change the summary only)."""
CYCLE_TYPES = frozenset(t for t, cls in EVENT_CLASSES.items() if "cycle" in cls.model_fields)


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


class RunProjector:
    """Folds one run's events and keeps what the read models need between batches."""

    def __init__(self, run_id: str) -> None:
        self.state = AgentState(run_id=run_id)
        self.summary = RunSummary(run_id=run_id)
        self.memory: dict[str, str] = {}
        self.last_entry_id: str | None = None
        self._cycles: dict[int, CycleRow] = {}
        self._operator: dict[str, OperatorRow] = {}
        self._attempts: dict[tuple[int, int], AttemptRow] = {}
        self._requests: dict[str, tuple[str, dict[str, Any]]] = {}
        self._delta: Delta | None = None
        self._first_ts: datetime | None = None
        self._last_ts: datetime | None = None

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def terminal(self) -> bool:
        return self.state.terminal

    def feed(self, entries: Iterable[tuple[str | None, Event] | Entry]) -> Delta:
        """Apply ``(stream entry id, event)`` pairs, or ``Entry`` triples that also carry
        the event's stored JSON, in log order; return what changed."""
        delta = self._delta = Delta(self.run_id, self.summary, self.last_entry_id)
        try:
            with bulk():  # no reference cycles here: the cyclic GC would only rescan
                for entry in entries:
                    raw = entry.raw if isinstance(entry, Entry) else None
                    self._one(entry[0], entry[1], raw)
        except ProjectionError as exc:
            delta.last_entry_id = self.last_entry_id
            self._summarize()
            exc.partial = delta  # what the events before the bad one changed
            raise
        finally:
            self._delta = None
        delta.last_entry_id = self.last_entry_id
        self._summarize()
        return delta

    def _one(self, entry_id: str | None, event: Event, raw: bytes | None) -> None:
        assert self._delta is not None
        try:
            self.state = state = fold(self.state, event)
        except ContReActEventError as exc:
            raise ProjectionError(
                f"run {self.run_id}: event {self.state.seq + 1} ({event.type}) cannot be "
                f"folded: {exc}"
            ) from None
        self.last_entry_id = entry_id if entry_id is not None else self.last_entry_id
        self._first_ts = self._first_ts or event.ts
        self._last_ts = event.ts
        cycle = int(getattr(event, "cycle", 0) if event.type in CYCLE_TYPES else 0)
        cycle = cycle or state.cycle_number
        if event.type in PROJECTED_TYPES:
            self._project(event, state, cycle)
        elif isinstance(event, LLMResponded):
            self.summary.prompt_tokens += event.usage.prompt_tokens
            self.summary.completion_tokens += event.usage.completion_tokens
        self._live_metrics(state)
        self._delta.events.append(
            EventRow(
                seq=state.seq,
                entry_id=entry_id,
                type=event.type,
                ts=event.ts,
                cycle=cycle,
                task_key=task_key(event),
                payload=raw if raw is not None else event_to_json(event),
            )
        )

    def _cycle(self, number: int) -> CycleRow:
        assert self._delta is not None
        row = self._cycles.get(number)
        if row is None:
            row = self._cycles[number] = CycleRow(cycle=number)
        self._delta.cycles[number] = row
        return row

    def _project(self, event: Event, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        delta = self._delta
        match event:
            case CycleStarted():
                row = self._cycle(event.cycle)
                row.started_at = event.ts
                row.advisory = event.advisory
                previous = self._cycles.get(event.cycle - 1)
                row.advisory_level = (
                    (previous.level if previous else None) if event.advisory else None
                )
                if (event.cycle - 1) % SNAPSHOT_EVERY == 0:
                    delta.snapshots.append(Snapshot(state.seq, event.cycle, snapshot_bytes(state)))
            case ToolCallRequested():
                tool = event.tool_name if event.tool_name in KNOWN_TOOLS else UNKNOWN_TOOL
                row = self._cycle(event.cycle)
                row.tools[tool] = row.tools.get(tool, 0) + 1
                self._requests[event.task_id] = (event.tool_name, dict(event.arguments))
            case ToolCallCompleted():
                request = self._requests.pop(event.task_id, None)
                if request is not None and event.ok:
                    self._memory_effect(state.seq, cycle, *request)
            case OperatorMessageSent():
                self._operator[event.task_id] = op = OperatorRow(
                    event.task_id, event.cycle, event.message, event.ts
                )
                delta.operator[event.task_id] = op
            case OperatorReplied():
                op_row = self._operator.get(event.task_id)
                if op_row is not None:
                    op_row.reply, op_row.replied_by, op_row.replied_at = (
                        event.text,
                        event.by,
                        event.ts,
                    )
                    delta.operator[event.task_id] = op_row
            case ReflectionRecorded():
                row = self._cycle(event.cycle)
                row.reflection, row.reflection_complete = event.text, event.complete
            case SimilarityAssessed():
                row = self._cycle(event.cycle)
                row.level = event.level
                row.max_similarity = event.max_similarity
                row.most_similar_cycle = event.most_similar_cycle
                row.advisory_given = event.advisory
                row.note = event.note
                delta.similarities.extend(
                    (event.cycle, other, value) for other, value in similarities(event, state)
                )
            case EmbeddingFailed():
                self._cycle(event.cycle).note = f"embedding failed: {event.error}"
            case ParagraphsChecked():
                text = state.attempts[-1].text if state.attempts else ""
                key = (event.cycle, event.attempt)
                self._attempts[key] = delta.attempts[key] = AttemptRow(
                    cycle=event.cycle,
                    attempt=event.attempt,
                    text=text,
                    similarity=event.overall_similarity,
                    is_unique=event.is_unique,
                    feedback=event.feedback,
                    matches=len(event.matches),
                    paragraphs=len(event.paragraphs),
                )
            case RegenerationRequested():
                self._mark_attempt(event.cycle, event.attempt - 1, "regenerated")
            case ParagraphsAccepted():
                outcome = "accepted (relaxed)" if event.relaxed else "accepted"
                self._mark_attempt(event.cycle, event.attempt, outcome)
            case TopicExhausted():
                self._cycle(event.cycle).topic_exhausted = True
            case CycleEnded():
                row = self._cycle(event.cycle)
                row.ended_at, row.ended_by, row.metrics = event.ts, event.ended_by, event.metrics

    def _live_metrics(self, state: AgentState) -> None:
        """The metrics of the cycle in progress, as they grow."""
        number = state.cycle_number
        if number and state.phase != "cycle_end" and not state.terminal:
            row = self._cycles.get(number)
            if row is None or (row.ended_at is None and row.metrics is not state.metrics):
                self._cycle(number).metrics = state.metrics

    def _mark_attempt(self, cycle: int, attempt: int, outcome: str) -> None:
        assert self._delta is not None
        row = self._attempts.get((cycle, attempt))
        if row is not None:
            row.outcome = outcome
            self._delta.attempts[(cycle, attempt)] = row

    def _memory_effect(self, seq: int, cycle: int, tool: str, arguments: dict[str, Any]) -> None:
        assert self._delta is not None
        if tool not in ("write", "delete"):
            return
        key = str(arguments.get("key", ""))
        change: ChangeKind
        if tool == "write":
            value = str(arguments.get("value", ""))
            if self.memory.get(key) == value:
                return
            change = "changed" if key in self.memory else "added"
            self.memory[key] = value
            self._delta.memory.append(MemoryChange(seq, cycle, key, change, value))
        elif key in self.memory:
            del self.memory[key]
            self._delta.memory.append(MemoryChange(seq, cycle, key, "deleted", None))

    def _summarize(self) -> None:
        """The run's summary after a batch (tokens are added up as answers come)."""
        state = self.state
        s = self.summary
        config = state.config
        s.status = state.status
        s.phase = state.phase
        s.model = config.model_name if config else ""
        s.resolved_model = state.resolved_model
        s.backend = state.backend or (config.backend if config else "")
        s.experiment = (config.experiment or "") if config else ""
        s.cycle = state.cycle_number
        s.cycle_count = config.cycle_count if config else 0
        s.step = state.step
        s.llm_calls = state.llm_calls
        s.events = state.seq
        s.memory_keys = len(self.memory)
        s.failure_reason = state.failure_reason or ""
        if self._first_ts is not None:
            s.created_at = s.created_at or self._first_ts
            s.updated_at = self._last_ts


def similarities(event: SimilarityAssessed, state: AgentState) -> tuple[tuple[int, float], ...]:
    """The cycle's row of the similarity matrix, from the vectors in the log: the
    cosine of this cycle's reflection with every earlier one (as assessed, when the
    assessment carries its row). Computed with numpy for display: equal to the
    assessment's exactly rounded figures within a few units in the last place."""
    if event.similarities:
        return event.similarities
    earlier = [(c, v) for c, v in state.embeddings if c < event.cycle]
    own = next((v for c, v in reversed(state.embeddings) if c == event.cycle), None)
    if own is None or not earlier:
        return ()
    matrix = np.asarray([v for _, v in earlier], dtype=np.float64)
    target = np.asarray(own, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(target))
    norms[norms == 0] = 1.0
    values = np.clip(matrix @ target / norms, -1.0, 1.0)
    return tuple((c, float(v)) for (c, _), v in zip(earlier, values, strict=True))


def snapshot_bytes(state: AgentState) -> bytes:
    return zlib.compress(state.__pydantic_serializer__.to_json(state), 1)


def state_from_snapshot(blob: bytes) -> AgentState:
    return AgentState.model_validate_json(zlib.decompress(blob))


def task_key(event: Event) -> str | None:
    """The task an event belongs to: a request, its answer and what happens between
    (operator message and reply) share it, so the viewer links one to the other."""
    if event.type in TASK_TYPES:
        task_id = getattr(event, "task_id", None)
        return task_id if isinstance(task_id, str) else None
    if event.type in ("LLMResponded", "LLMFailed", "ModelChecked"):
        return event.causation_id
    return None


def describe(event: Event) -> str:
    """One line for the event log (agent text included: the page escapes it). Made
    when a page shows the event, not stored."""
    match event:
        case RunRequested() | RunStarted():
            text = f"{event.config.model_name}, {event.config.cycle_count} cycles"
        case ModelChecked():
            text = f"{'ok' if event.ok else 'FAILED'} {event.backend or ''} {event.detail}"
        case CycleStarted():
            text = f"cycle {event.cycle}" + (" with an advisory" if event.advisory else "")
        case LLMRequested():
            text = f"cycle {event.cycle} step {event.step} (call {event.call_index + 1})"
        case LLMResponded():
            calls = ", ".join(c.name for c in event.message.tool_calls)
            text = (f"calls {calls}" if calls else "answer") + (
                f": {event.message.content}" if event.message.content else ""
            )
        case LLMFailed():
            text = event.error
        case ToolCallRequested():
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            text = f"{event.tool_name}({args})"
        case ToolCallCompleted():
            text = f"{event.tool_name} {'ok' if event.ok else 'error'}: {event.output}"
        case OperatorMessageSent():
            text = event.message
        case OperatorReplied():
            text = f"{event.by}: {event.text}"
        case ReflectionRecorded():
            text = event.text
        case CycleEnded():
            text = f"cycle {event.cycle} ended by {event.ended_by}"
        case SimilarityAssessed():
            sim = "-" if event.max_similarity is None else f"{event.max_similarity:.3f}"
            text = f"level {event.level}, max {sim} (cycle {event.most_similar_cycle or '-'})"
        case RunCompleted():
            text = f"{event.cycles} cycles"
        case RunFailed() | RunCancelled():
            text = event.reason
        case ParagraphsChecked():
            text = (
                f"attempt {event.attempt}: {len(event.paragraphs)} paragraph(s), "
                f"similarity {event.overall_similarity:.3f}, "
                f"{'unique' if event.is_unique else 'repeats'}"
            )
        case RegenerationRequested():
            text = f"attempt {event.attempt} asked for"
        case ReflectionEmbedded():
            text = f"cycle {event.cycle}, {len(event.vector)}-d ({event.model})"
        case _:
            data = event.model_dump(
                mode="json",
                exclude={"event_id", "run_id", "type", "schema_version", "ts", "correlation_id"},
            )
            text = orjson.dumps(data).decode()
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
