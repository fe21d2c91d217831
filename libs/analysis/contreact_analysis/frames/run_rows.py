"""One run's rows of every table, made by folding its events with the platform's own
``fold``: the cycle metrics are the ones ``CycleEnded`` carries (computed by the fold),
memory changes and tool kinds come from ``contreact_events.history.memory_ledger`` and the
Table 1 figures from ``contreact_events.protocol.table1``, as the dashboard's read models
take them. A memory change says who made it (``written_by``): the agent, through its own
tool call, or the platform, through the memory policy's store
(``PersistentMemoryStored``); Table 1's unique memory keys are the agent's own, the
policy's kept apart (``platform_memory_keys``).
A fork's rows are its own cycles' (K+1..), its Table 1 figures and totals
theirs, unless ``inherited`` asks for the cycles it copied from its parent too; its
label is ``PARENT-LABEL -> TARGET-LABEL at K`` (``config.run_places``). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from contreact_analysis.exceptions import UnreadableRun
from contreact_analysis.frames.fork_rows import own_rows
from contreact_analysis.frames.places import place_columns, run_facts
from contreact_events.catalog import Event
from contreact_events.catalog.cognition import (
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    PersistentMemoryStored,
)
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleMetrics,
    CycleStarted,
    LLMResponded,
    ReflectionRecorded,
)
from contreact_events.catalog.diversity import SimilarityAssessed
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.run import RunStarted
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.config.experiment import config_sha256
from contreact_events.config.run_places import run_places
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.memory_ledger import (
    KNOWN_TOOLS,
    apply_effect,
    memory_effect,
    tool_kind,
)
from contreact_events.history.run_summary import run_metrics, run_summary
from contreact_events.protocol.table1 import run_table1

Row = dict[str, Any]

TOOL_COLUMNS = {name: f"calls_{name}" for name in KNOWN_TOOLS} | {
    "(added tool)": "calls_added",
    "(unknown tool)": "calls_unknown",
}
"""The per-cycle count of each kind of tool call (made-up tools counted together)."""
METRIC_FIELDS = tuple(CycleMetrics.model_fields)
ROW_TYPES = frozenset(
    {
        "RunStarted",
        "OperatorMessageAnalyzed",
        "CycleStarted",
        "ToolCallRequested",
        "ToolCallCompleted",
        "OperatorMessageSent",
        "OperatorReplied",
        "ReflectionRecorded",
        "SimilarityAssessed",
        "CycleEnded",
        "PersistentMemoryRequested",
        "PersistentMemoryStored",
        "RunForked",
        "LLMResponded",
    }
)
"""The event types that add or change a row besides the events table's."""
AGENT, PLATFORM = "agent", "platform"
"""Who wrote a memory key: the agent's own tool call, or the memory policy's store."""


def _call_cost(event_type: str, fields: dict[str, Any]) -> float | None:
    """The cost of the LLM call an event records (an agent's call, an exchange's
    analysis by a model); None: unknown, or no call."""
    if event_type not in ("LLMResponded", "OperatorMessageAnalyzed"):
        return None
    usage = fields["usage"]
    return usage.cost if usage is not None else None


@dataclass
class RunRows:
    """The rows one run contributes to each table."""

    run: Row
    cycles: list[Row] = field(default_factory=list)
    tool_calls: list[Row] = field(default_factory=list)
    messages: list[Row] = field(default_factory=list)
    events: list[Row] = field(default_factory=list)
    operator: list[Row] = field(default_factory=list)
    memory: list[Row] = field(default_factory=list)
    state: AgentState | None = None
    forked: RunForked | None = None
    """A fork's ``RunForked`` (its parent, K, the events it copied)."""


def run_rows(
    run_id: str, events: Iterable[Event], *, digest: bool = True, inherited: bool = False
) -> RunRows:
    """Fold ``events`` (one run's log, in order) into the run's rows; a fork's own
    cycles only unless ``inherited``. UnreadableRun when an event cannot be folded
    (names the run and the event)."""
    builder = _Builder(run_id)
    state = AgentState(run_id=run_id)
    for event in events:
        if event.type == "CycleStarted":
            builder.cycle_start_index = len(state.message_history)
        try:
            state = fold(state, event)
        except ContReActEventError as exc:
            raise UnreadableRun(
                f"run {run_id}: event {state.seq + 1} ({event.type}) cannot be folded: {exc}; "
                "check the log with `contreact rebuild`"
            ) from None
        builder.add(event, state)
    rows = builder.finish(state, digest=digest)
    return rows if inherited else own_rows(rows)


class _Builder:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.cycles: dict[int, Row] = {}
        self.tool_calls: dict[str, Row] = {}
        self.operator: dict[str, Row] = {}
        self.events: list[Row] = []
        self.memory: dict[str, str] = {}
        self.platform_keys: set[str] = set()
        """The keys in memory whose value the platform (the memory policy) wrote."""
        self.memory_rows: list[Row] = []
        self._kept: dict[str, Row] = {}
        """The memory policy's stores asked for (``PersistentMemoryRequested``), as writes."""
        self.message_starts: list[tuple[int, int]] = []
        self.cycle_start_index = 0
        self.first_ts: datetime | None = None
        self.last_ts: datetime | None = None
        self.started: RunStarted | None = None
        self.forked: RunForked | None = None
        self.own_first_ts: datetime | None = None
        """A fork: the time of its first own event (``RunForked``)."""

    def cycle(self, number: int) -> Row:
        row = self.cycles.get(number)
        if row is None:
            row = self.cycles[number] = {
                "run_id": self.run_id,
                "cycle": number,
                "started_at": None,
                "ended_at": None,
                "ended_by": None,
                "advisory": None,
                "reflection": None,
                "reflection_complete": True,
                "similarity_level": None,
                "max_similarity": None,
                "most_similar_cycle": None,
                "advisory_given": None,
                **dict.fromkeys(TOOL_COLUMNS.values(), 0),
                "cost": 0.0,
                "uncosted_calls": 0,
            }
        return row

    def add(self, event: Event, state: AgentState) -> None:
        fields = event.__dict__  # the hot path: no pydantic attribute lookups that miss
        self.first_ts = self.first_ts or event.ts
        self.last_ts = event.ts
        self.events.append(
            {
                "run_id": self.run_id,
                "seq": state.seq,
                "event_id": event.event_id,
                "type": event.type,
                "schema_version": event.schema_version,
                "ts": event.ts,
                "cycle": fields.get("cycle") or state.cycle_number,
                "task_id": fields.get("task_id") or event.causation_id,
                "cost": _call_cost(event.type, fields),
            }
        )
        if event.type in ROW_TYPES:
            self._rows(event, state)

    def _rows(self, event: Event, state: AgentState) -> None:
        match event:
            case RunStarted():
                self.started = event
            case RunForked():
                self.forked, self.own_first_ts = event, event.ts
            case LLMResponded() | OperatorMessageAnalyzed() if event.usage is not None:
                row, cost = self.cycle(state.cycle_number), event.usage.cost
                row["uncosted_calls" if cost is None else "cost"] += 1 if cost is None else cost
            case CycleStarted():
                row = self.cycle(event.cycle)
                row["started_at"], row["advisory"] = event.ts, event.advisory
                self.message_starts.append((self.cycle_start_index, event.cycle))
            case ToolCallRequested():
                kind = tool_kind(event.tool_name, state.config)
                self.cycle(event.cycle)[TOOL_COLUMNS[kind]] += 1
                self.tool_calls[event.task_id] = {
                    "run_id": self.run_id,
                    "task_id": event.task_id,
                    "cycle": event.cycle,
                    "step": event.step,
                    "index": event.index,
                    "tool": kind,
                    "tool_name": event.tool_name,
                    "arguments": orjson.dumps(event.arguments, default=str).decode(),
                    "arguments_error": event.arguments_error,
                    "requested_at": event.ts,
                    "completed_at": None,
                    "ok": None,
                    "output": None,
                    "output_chars": None,
                }
            case ToolCallCompleted():
                call = self.tool_calls.get(event.task_id)
                if call is not None:
                    call.update(
                        completed_at=event.ts,
                        ok=event.ok,
                        output=event.output,
                        output_chars=len(event.output),
                    )
                    if event.ok:
                        self._memory(state.seq, call, event.ts, AGENT)
            case PersistentMemoryRequested():  # the memory policy's store: a write
                arguments = {"key": event.key, "value": event.value}
                self._kept[event.task_id] = {
                    "tool_name": "write",
                    "arguments": orjson.dumps(arguments).decode(),
                    "cycle": event.cycle,
                }
            case PersistentMemoryStored():
                kept = self._kept.pop(event.task_id, None)
                if kept is not None and event.ok:
                    self._memory(state.seq, kept, event.ts, PLATFORM)
            case OperatorMessageSent():
                self.operator[event.task_id] = {
                    "run_id": self.run_id,
                    "task_id": event.task_id,
                    "cycle": event.cycle,
                    "message": event.message,
                    "sent_at": event.ts,
                    "reply": None,
                    "replied_by": None,
                    "replied_at": None,
                }
            case OperatorReplied():
                exchange = self.operator.get(event.task_id)
                if exchange is not None:
                    exchange.update(reply=event.text, replied_by=event.by, replied_at=event.ts)
            case ReflectionRecorded():
                row = self.cycle(event.cycle)
                row["reflection"], row["reflection_complete"] = event.text, event.complete
            case SimilarityAssessed():
                row = self.cycle(event.cycle)
                row.update(
                    similarity_level=event.level,
                    max_similarity=event.max_similarity,
                    most_similar_cycle=event.most_similar_cycle,
                    advisory_given=event.advisory,
                )
            case CycleEnded():
                row = self.cycle(event.cycle)
                row.update(ended_at=event.ts, ended_by=event.ended_by)
            case _:
                pass

    def _memory(self, seq: int, call: Row, ts: datetime, by: str) -> None:
        arguments = orjson.loads(call["arguments"])
        effect = memory_effect(self.memory, call["tool_name"], arguments)
        if effect is None:
            return
        apply_effect(self.memory, effect)
        if by == PLATFORM and effect.change != "deleted":
            self.platform_keys.add(effect.key)
        else:
            self.platform_keys.discard(effect.key)
        self.memory_rows.append(
            {
                "run_id": self.run_id,
                "seq": seq,
                "cycle": call["cycle"],
                "key": effect.key,
                "change": effect.change,
                "value": effect.value,
                "written_by": by,
                "ts": ts,
            }
        )

    def finish(self, state: AgentState, *, digest: bool) -> RunRows:
        metrics = run_metrics(state)
        forked = self.forked
        at_cycle = forked.at_cycle if forked else 0
        keys_by_cycle = self._keys_by_cycle(len(metrics))
        cycles = []
        for number, m in enumerate(metrics, start=1):
            row = self.cycle(number)
            row.update(m.model_dump())
            row["steps"] = m.llm_calls
            row["tokens"] = m.prompt_tokens + m.completion_tokens
            row["memory_keys"] = keys_by_cycle[number - 1]
            row["complete"] = row["ended_at"] is not None
            row["inherited"] = number <= at_cycle
            cycles.append(row)
        summary = run_summary(state)
        config = state.config
        experiment = summary.experiment
        started = self.started
        ended = self.last_ts if state.terminal else None
        run: Row = {
            "run_id": self.run_id,
            "experiment": experiment or None,
            "condition": config.condition if config else None,
            "model": summary.model,
            "resolved_model": summary.resolved_model or None,
            "backend": summary.backend,
            "model_digest": state.model_digest,
            "status": summary.status,
            "failure_reason": summary.failure_reason or None,
            "cycle_count": summary.cycle_count,
            "cycles_done": len(state.cycle_metrics),
            "seed": started.seed if started else None,
            "created_at": self.first_ts,
            "started_at": started.ts if started else None,
            "ended_at": ended,
            "duration_s": (ended - self.first_ts).total_seconds()
            if ended and self.first_ts
            else None,
            "llm_calls": summary.llm_calls,
            "prompt_tokens": summary.prompt_tokens,
            "completion_tokens": summary.completion_tokens,
            "tokens": summary.tokens,
            "llm_seconds": summary.llm_seconds,
            "cost": summary.cost,
            "uncosted_calls": summary.uncosted_calls,
            "events": summary.events,
            "memory_keys": len(self.memory) - len(self.platform_keys),
            "platform_memory_keys": len(self.platform_keys),
            "code_version": state.code_version or None,
            "config_sha256": config_sha256(config) if config else None,
            "prompt_hashes": orjson.dumps(
                started.prompt_hashes, option=orjson.OPT_SORT_KEYS
            ).decode()
            if started
            else None,
            "config": config.model_dump_json() if config else None,
            "state_digest": state.digest() if digest else None,
            "parent_run_id": forked.parent_run_id if forked else None,
            "at_cycle": at_cycle or None,
            "researcher_question": (forked.question or None) if forked else None,
            **run_table1(metrics, len(self.memory) - len(self.platform_keys)),
        }
        run.update(place_columns(run_places([run_facts(run)])[self.run_id]))
        messages = self._messages(state)
        return RunRows(
            run=run,
            cycles=cycles,
            tool_calls=list(self.tool_calls.values()),
            messages=messages,
            events=self.events,
            operator=list(self.operator.values()),
            memory=self.memory_rows,
            state=state,
            forked=forked,
        )

    def _keys_by_cycle(self, cycles: int) -> list[int]:
        """The agent's own unique memory keys at the end of each cycle (the ledger
        replayed by cycle; a key whose last value the platform wrote is not counted)."""
        counts, keys = [], set()
        changes = iter(self.memory_rows)
        pending = next(changes, None)
        for number in range(1, cycles + 1):
            while pending is not None and pending["cycle"] <= number:
                if pending["change"] == "deleted" or pending["written_by"] == PLATFORM:
                    keys.discard(pending["key"])
                else:
                    keys.add(pending["key"])
                pending = next(changes, None)
            counts.append(len(keys))
        return counts

    def _messages(self, state: AgentState) -> list[Row]:
        rows = []
        starts = self.message_starts
        position, cycle = 0, 0
        for index, message in enumerate(state.message_history):
            while position < len(starts) and starts[position][0] <= index:
                cycle = starts[position][1]
                position += 1
            rows.append(
                {
                    "run_id": self.run_id,
                    "index": index,
                    "cycle": cycle,
                    "role": message.role,
                    "content": message.content,
                    "chars": len(message.content),
                    "tool_calls": len(message.tool_calls),
                    "tool_name": message.tool_name,
                }
            )
        return rows
