"""``RunProjector``: folds one run's events and turns each batch into a ``Delta`` of
the read-model rows that changed. Pure: no I/O, no clock."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from contreact_events.catalog import EVENT_CLASSES, Event
from contreact_events.catalog.cognition import (
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    PersistentMemoryStored,
)
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
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
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.diversity.search_texts import TEXT_EVENT_TYPES, SearchTexts
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.memory_ledger import (
    UNKNOWN_TOOL,
    apply_effect,
    memory_effect,
    tool_kind,
)
from contreact_events.history.run_summary import run_summary
from contreact_events.wire.codec import bulk, event_to_json
from contreact_ui.exceptions import ProjectionError
from contreact_ui.models import (
    CycleView,
    ExchangeAnalysis,
    OperatorExchange,
    RegenerationAttempt,
    analysis_status,
)
from contreact_ui.read_models.history_cuts import CUT_TYPES, HistoryCuts
from contreact_ui.read_models.rows import (
    CycleMark,
    Delta,
    Entry,
    EventRow,
    MemoryChange,
    Snapshot,
    WrittenBy,
    new_attempt,
    new_cycle,
    new_exchange,
)
from contreact_ui.read_models.similarity_rows import band_row, similarities

__all__ = [
    "SNAPSHOT_EVERY",
    "UNKNOWN_TOOL",
    "RunProjector",
    "similarities",
    "snapshot_bytes",
    "state_from_snapshot",
    "task_key",
]
SNAPSHOT_EVERY = 5
"""Cycles between snapshots of the fold's state (taken at cycles 1, 6, 11, ...): the
replay page folds at most this many cycles of events from the nearest one."""


TASK_TYPES = frozenset(t for t, cls in EVENT_CLASSES.items() if "task_id" in cls.model_fields)
CYCLE_TYPES = frozenset(t for t, cls in EVENT_CLASSES.items() if "cycle" in cls.model_fields)
SEARCHED_TYPES = CYCLE_TYPES | TEXT_EVENT_TYPES
"""What ``SearchTexts.feed`` reads: the texts, and the cycle of any event that has one."""
CAUSED_TYPES = frozenset({"LLMResponded", "LLMFailed", "ModelChecked"})
"""Answers without a task id: their task is the event they answer."""


class RunProjector:
    """Folds one run's events and keeps what the read models need between batches."""

    def __init__(self, run_id: str) -> None:
        self.state = AgentState(run_id=run_id)
        self.summary = run_summary(self.state)
        self.memory: dict[str, str] = {}
        self.platform_keys: set[str] = set()  # the keys whose value the memory policy wrote
        self.last_entry_id: str | None = None
        self._cycles: dict[int, CycleView] = {}
        self._marks: dict[int, CycleMark] = {}
        self._operator: dict[str, OperatorExchange] = {}
        self._analysis_of: dict[str, str] = {}  # analysis task id -> its exchange's task
        self._attempts: dict[tuple[int, int], RegenerationAttempt] = {}
        self._requests: dict[str, tuple[str, dict[str, Any], WrittenBy]] = {}
        self._delta: Delta | None = None
        self._first_ts: datetime | None = None
        self._last_ts: datetime | None = None
        self._texts = SearchTexts(run_id)
        self._cuts = HistoryCuts()

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
            exc.partial = self._partial(delta)  # what the events before the bad one changed
            raise
        except ContReActEventError as exc:  # an entry that does not decode (read lazily)
            error = ProjectionError(f"run {self.run_id}: {exc}")
            error.partial = self._partial(delta)
            raise error from None
        finally:
            self._delta = None
        delta.last_entry_id = self.last_entry_id
        self._summarize(delta)
        return delta

    def _partial(self, delta: Delta) -> Delta:
        delta.last_entry_id = self.last_entry_id
        self._summarize(delta)
        return delta

    def _one(self, entry_id: str | None, event: Event, raw: bytes | None) -> None:
        delta = self._delta
        assert delta is not None
        try:
            self.state = state = fold(self.state, event)
        except ContReActEventError as exc:
            raise ProjectionError(
                f"run {self.run_id}: event {self.state.seq + 1} ({event.type}) cannot be "
                f"folded: {exc}"
            ) from None
        if entry_id is not None:
            self.last_entry_id = entry_id
        self._first_ts, self._last_ts = self._first_ts or event.ts, event.ts
        kind = event.type
        cycle = int(event.__dict__["cycle"]) if kind in CYCLE_TYPES else 0
        cycle = cycle or state.cycle_number
        project = _PROJECTIONS.get(kind)
        if project is not None:
            project(self, event, state, cycle)
        if kind == "LLMResponded" and state.phase == "cycle_end" and state.cycle_metrics:
            # a history compaction's answer: its tokens count to the cycle it follows
            self._cycle(state.cycle_number).metrics = state.cycle_metrics[-1]
        number = state.cycle_number  # the metrics of the cycle in progress, as they grow
        if number and state.phase != "cycle_end" and not state.terminal:
            row = self._cycles.get(number)
            if row is None or (row.ended_at is None and row.metrics is not state.metrics):
                self._cycle(number).metrics = state.metrics
        if kind in CUT_TYPES and (cut := self._cuts.feed(event, state)) is not None:
            delta.cuts[cut.cycle] = cut
        if kind in SEARCHED_TYPES:
            texts = self._texts.feed(event, state.seq)
            if texts:
                delta.texts.extend(texts)
        delta.events.append(
            EventRow(
                state.run_id,
                state.seq,
                entry_id,
                kind,
                event.ts.isoformat(),
                cycle,
                task_key(event),
                raw if raw is not None else event_to_json(event),
            )
        )

    def _cycle(self, number: int) -> CycleView:
        assert self._delta is not None
        row = self._cycles.get(number)
        if row is None:
            row = self._cycles[number] = new_cycle(number)
        self._delta.cycles[number] = row
        return row

    def _mark(self, number: int) -> CycleMark:
        assert self._delta is not None
        mark = self._marks.get(number)
        if mark is None:
            mark = self._marks[number] = CycleMark()
        self._delta.marks[number] = mark
        return mark

    # What each projected event type changes besides the summary (``_PROJECTIONS``):
    # one method per type, found by the event's type name (each name is one class).

    def _cycle_started(self, event: CycleStarted, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        row = self._cycle(event.cycle)
        row.started_at = event.ts
        row.advisory = event.advisory
        previous = self._cycles.get(event.cycle - 1)
        row.advisory_level = (previous.level if previous else None) if event.advisory else None
        self._mark(event.cycle).start_seq = state.seq
        if (event.cycle - 1) % SNAPSHOT_EVERY == 0:
            self._delta.snapshots.append(Snapshot(state.seq, event.cycle, snapshot_bytes(state)))

    def _tool_requested(self, event: ToolCallRequested, state: AgentState, cycle: int) -> None:
        tool = tool_kind(event.tool_name, state.config)
        row = self._cycle(event.cycle)
        row.tools[tool] = row.tools.get(tool, 0) + 1
        self._requests[event.task_id] = (event.tool_name, dict(event.arguments), "agent")

    def _memory_requested(
        self, event: PersistentMemoryRequested, state: AgentState, cycle: int
    ) -> None:  # the memory policy's store: a write
        kept = {"key": event.key, "value": event.value}
        self._requests[event.task_id] = ("write", kept, "platform")

    def _tool_completed(
        self, event: ToolCallCompleted | PersistentMemoryStored, state: AgentState, cycle: int
    ) -> None:
        request = self._requests.pop(event.task_id, None)
        if request is not None and event.ok:
            self._memory_effect(state.seq, cycle, *request)

    def _operator_sent(self, event: OperatorMessageSent, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        self._operator[event.task_id] = op = new_exchange(
            event.task_id, event.cycle, event.message, event.ts, state.seq
        )
        self._delta.operator[event.task_id] = op

    def _operator_replied(self, event: OperatorReplied, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        op_row = self._operator.get(event.task_id)
        if op_row is not None:
            op_row.reply, op_row.replied_by, op_row.replied_at = event.text, event.by, event.ts
            op_row.replied_seq = state.seq
            self._delta.operator[event.task_id] = op_row

    def _analysis_requested(
        self, event: OperatorMessageAnalysisRequested, state: AgentState, cycle: int
    ) -> None:
        assert self._delta is not None
        self._analysis_of[event.task_id] = event.exchange_task_id
        op_row = self._operator.get(event.exchange_task_id)
        if op_row is not None:
            op_row.analysis_requested = event.analyser
            op_row.analysis_requested_seq = state.seq
            op_row.analysis_status = analysis_status(op_row)
            self._delta.operator[op_row.task_id] = op_row

    def _analyzed(self, event: OperatorMessageAnalyzed, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        op_row = self._operator.get(self._analysis_of.get(event.task_id, ""))
        if op_row is not None:
            relevant = event.analysis.relevant_memories
            op_row.analysis = ExchangeAnalysis(
                **event.analysis.model_dump(mode="json"),
                fallback_reason=event.fallback_reason,
                platform_memories=[k for k in relevant if k in self.platform_keys],
            )
            op_row.analysis_seq = state.seq
            op_row.analysis_status = analysis_status(op_row)
            self._delta.operator[op_row.task_id] = op_row

    def _reflection(self, event: ReflectionRecorded, state: AgentState, cycle: int) -> None:
        row = self._cycle(event.cycle)
        row.reflection, row.reflection_complete = event.text, event.complete

    def _assessed(self, event: SimilarityAssessed, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        row = self._cycle(event.cycle)
        row.level = event.level
        row.max_similarity = event.max_similarity
        row.most_similar_cycle = event.most_similar_cycle
        row.advisory_given = event.advisory
        row.note = event.note
        assessed = similarities(event, state)
        self._delta.similarities.extend((event.cycle, other, value) for other, value in assessed)
        self._mark(event.cycle).band = band_row(event.cycle, assessed)

    def _embedded(self, event: ReflectionEmbedded, state: AgentState, cycle: int) -> None:
        self._mark(event.cycle).embedded = True

    def _embedding_failed(self, event: EmbeddingFailed, state: AgentState, cycle: int) -> None:
        self._cycle(event.cycle).note = f"embedding failed: {event.error}"

    def _checked(self, event: ParagraphsChecked, state: AgentState, cycle: int) -> None:
        assert self._delta is not None
        text = state.attempts[-1].text if state.attempts else ""
        key = (event.cycle, event.attempt)
        self._attempts[key] = self._delta.attempts[key] = new_attempt(
            cycle=event.cycle,
            attempt=event.attempt,
            text=text,
            similarity=event.overall_similarity,
            is_unique=event.is_unique,
            feedback=event.feedback,
            matches=len(event.matches),
            paragraphs=len(event.paragraphs),
        )

    def _regeneration(self, event: RegenerationRequested, state: AgentState, cycle: int) -> None:
        self._mark_attempt(event.cycle, event.attempt - 1, "regenerated")

    def _accepted(self, event: ParagraphsAccepted, state: AgentState, cycle: int) -> None:
        outcome = "accepted (relaxed)" if event.relaxed else "accepted"
        self._mark_attempt(event.cycle, event.attempt, outcome)

    def _exhausted(self, event: TopicExhausted, state: AgentState, cycle: int) -> None:
        self._cycle(event.cycle).topic_exhausted = True

    def _cycle_ended(self, event: CycleEnded, state: AgentState, cycle: int) -> None:
        row = self._cycle(event.cycle)
        row.ended_at, row.ended_by, row.metrics = event.ts, event.ended_by, event.metrics

    def _mark_attempt(self, cycle: int, attempt: int, outcome: str) -> None:
        assert self._delta is not None
        row = self._attempts.get((cycle, attempt))
        if row is not None:
            row.outcome = outcome
            self._delta.attempts[(cycle, attempt)] = row

    def _memory_effect(
        self, seq: int, cycle: int, tool: str, arguments: dict[str, Any], by: WrittenBy
    ) -> None:
        assert self._delta is not None
        effect = memory_effect(self.memory, tool, arguments)
        if effect is not None:
            apply_effect(self.memory, effect)
            mine = by == "platform" and effect.change != "deleted"
            (self.platform_keys.add if mine else self.platform_keys.discard)(effect.key)
            self._delta.memory.append(MemoryChange(seq, cycle, *effect, by))

    def _summarize(self, delta: Delta) -> None:
        """The run's summary after a batch: ``run_summary`` (the figures the CLI and the
        Redis listing show), and beside it what only the dashboard keeps."""
        self.summary = delta.summary = run_summary(self.state)
        delta.memory_keys = len(self.memory)
        delta.created_at = self._first_ts
        delta.updated_at = self._last_ts


_Projection = Callable[[RunProjector, Any, AgentState, int], None]
_PROJECTIONS: dict[str, _Projection] = {
    "CycleStarted": RunProjector._cycle_started,
    "ToolCallRequested": RunProjector._tool_requested,
    "PersistentMemoryRequested": RunProjector._memory_requested,
    "ToolCallCompleted": RunProjector._tool_completed,
    "PersistentMemoryStored": RunProjector._tool_completed,
    "OperatorMessageSent": RunProjector._operator_sent,
    "OperatorReplied": RunProjector._operator_replied,
    "OperatorMessageAnalysisRequested": RunProjector._analysis_requested,
    "OperatorMessageAnalyzed": RunProjector._analyzed,
    "ReflectionRecorded": RunProjector._reflection,
    "SimilarityAssessed": RunProjector._assessed,
    "ReflectionEmbedded": RunProjector._embedded,
    "EmbeddingFailed": RunProjector._embedding_failed,
    "ParagraphsChecked": RunProjector._checked,
    "RegenerationRequested": RunProjector._regeneration,
    "ParagraphsAccepted": RunProjector._accepted,
    "TopicExhausted": RunProjector._exhausted,
    "CycleEnded": RunProjector._cycle_ended,
}
"""What each projected event type changes besides the summary, by type name (the
others change the summary only)."""
assert all(EVENT_CLASSES[name].__name__ == name for name in _PROJECTIONS)


def snapshot_bytes(state: AgentState) -> bytes:
    return zlib.compress(state.__pydantic_serializer__.to_json(state), 1)


def state_from_snapshot(blob: bytes) -> AgentState:
    return AgentState.model_validate_json(zlib.decompress(blob))


def task_key(event: Event) -> str | None:
    """The task an event belongs to: a request, its answer and what happens between
    (operator message and reply) share it, so the viewer links one to the other."""
    kind = event.type
    if kind in TASK_TYPES:
        task_id = event.__dict__.get("task_id")
        return task_id if isinstance(task_id, str) else None
    if kind in CAUSED_TYPES:
        return event.causation_id
    return None
