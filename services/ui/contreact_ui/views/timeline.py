"""Where the time went: each task of a cycle (LLM calls, tool calls, the operator's
reply, embeddings) from its request to its answer, as trace viewers show spans; and
every cycle's split between them.

A message to the operator is a tool call (``send_message_to_operator``) whose task
holds the wait for the reply: from ``OperatorMessageSent`` to ``OperatorReplied`` the
time is the operator's (a person's, or the deadline's when nobody answered), not the
tool's; what the call takes after the reply (its analysis, the memory policy) stays the
tool's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from contreact_events.wire.codec import event_from_json
from contreact_ui.exceptions import BadQuery
from contreact_ui.models.timeline import CycleTime, Span, TimelinePage
from contreact_ui.views.runs import run_row

Kind = Literal["llm", "tool", "operator", "embedding", "other"]
KINDS: dict[str, Kind] = {
    "LLMRequested": "llm",
    "ToolCallRequested": "tool",
    "OperatorMessageSent": "operator",
}
FAILED = frozenset({"LLMFailed"})
WAIT = ("OperatorMessageSent", "OperatorReplied")
"""The part of an operator tool call that is the operator's: from the message to the reply."""


@dataclass
class _Task:
    key: str
    cycle: int
    kind: Kind
    seq: int
    start: datetime
    end: datetime | None = None
    ok: bool = True
    types: list[str] = field(default_factory=list)
    at: dict[str, datetime] = field(default_factory=dict)
    """When each type of the task's events first came."""


def _kind(first_type: str) -> Kind:
    if first_type in KINDS:
        return KINDS[first_type]
    if "Embed" in first_type or "Paragraph" in first_type:
        return "embedding"
    return "other"


def _tasks(rows: Iterable[sqlite3.Row]) -> list[_Task]:
    tasks: dict[str, _Task] = {}
    for row in rows:
        ts = datetime.fromisoformat(row["ts"])
        task = tasks.get(row["task_key"])
        if task is None:
            tasks[row["task_key"]] = _Task(
                key=row["task_key"],
                cycle=row["cycle"],
                kind=_kind(row["type"]),
                seq=row["seq"],
                start=ts,
                types=[row["type"]],
                at={row["type"]: ts},
            )
            continue
        task.end = ts
        task.types.append(row["type"])
        task.at.setdefault(row["type"], ts)
        if row["type"] in FAILED:
            task.ok = False
    return list(tasks.values())


def _seconds(a: datetime, b: datetime) -> float:
    return round((b - a).total_seconds(), 3)


SPLIT = (
    "SELECT cycle, first, sum(took) FROM ("
    " SELECT cycle, type AS first, min(seq),"
    " (julianday(max(ts)) - julianday(min(ts))) * 86400.0 AS took"
    " FROM events WHERE run_id = ? AND task_key IS NOT NULL AND cycle > 0"
    " GROUP BY task_key HAVING count(*) > 1"
    ") GROUP BY cycle, first"
)
"""Seconds per cycle and kind of task (its first event's type), from request to answer,
summed in SQLite: a 1,000-cycle run's tasks are tens of thousands of events."""

WAITS = (
    "SELECT cycle, sum((julianday(replied_at) - julianday(sent_at)) * 86400.0) FROM operator"
    " WHERE run_id = ? AND replied_at IS NOT NULL AND cycle > 0 GROUP BY cycle"
)
"""Seconds per cycle the operator's replies took (within their tool calls' time), from
the run's exchanges (a few rows; the events were read once, by ``SPLIT``)."""


def _splits(
    conn: sqlite3.Connection, run_id: str, bounds: dict[int, tuple[str | None, str | None]]
) -> list[CycleTime]:
    spent: dict[int, dict[Kind, float]] = {}
    for cycle, first, took in conn.execute(SPLIT, (run_id,)):
        kind = _kind(first)
        cell = spent.setdefault(cycle, {})
        cell[kind] = cell.get(kind, 0.0) + float(took or 0.0)
    for cycle, waited in conn.execute(WAITS, (run_id,)):
        cell = spent.setdefault(cycle, {})
        cell["operator"] = cell.get("operator", 0.0) + float(waited or 0.0)
        cell["tool"] = max(cell.get("tool", 0.0) - float(waited or 0.0), 0.0)
    out = []
    for cycle, (start, end) in bounds.items():
        cell = spent.get(cycle, {})
        total = (
            _seconds(datetime.fromisoformat(start), datetime.fromisoformat(end))
            if start and end
            else None
        )
        busy = sum(cell.get(k, 0.0) for k in ("llm", "tool", "operator"))
        out.append(
            CycleTime(
                cycle=cycle,
                total_s=total,
                llm_s=round(cell.get("llm", 0.0), 3),
                tool_s=round(cell.get("tool", 0.0), 3),
                operator_s=round(cell.get("operator", 0.0), 3),
                other_s=round(max(total - busy, 0.0), 3) if total is not None else 0.0,
            )
        )
    return out


def timeline_page(conn: sqlite3.Connection, run_id: str, cycle: int | None) -> TimelinePage:
    run = run_row(conn, run_id)
    bounds = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT cycle, started_at, ended_at FROM cycles WHERE run_id = ? ORDER BY cycle",
            (run_id,),
        )
    }
    cycles = sorted(bounds)
    if cycle is None:
        cycle = cycles[-1] if cycles else 0
    elif cycle not in bounds:
        raise BadQuery(
            f"run {run_id} has no cycle {cycle}"
            + (f" (cycles {cycles[0]} to {cycles[-1]})" if cycles else " (none started yet)")
        )
    by_cycle = _splits(conn, run_id, bounds)
    rows = conn.execute(
        "SELECT seq, type, ts, cycle, task_key FROM events "
        "WHERE run_id = ? AND task_key IS NOT NULL AND cycle = ? ORDER BY seq",
        (run_id, cycle),
    ).fetchall()
    shown = _tasks(rows)
    origin_text = bounds.get(cycle, (None, None))[0]
    origin = datetime.fromisoformat(origin_text) if origin_text else None
    if origin is None and shown:
        origin = min(t.start for t in shown)
    spans = [
        span
        for task in shown
        for span in _task_spans(conn, run_id, task, origin or task.start, run.status)
    ]
    time = next((t for t in by_cycle if t.cycle == cycle), None) or CycleTime(
        cycle=cycle, total_s=None, llm_s=0, tool_s=0, operator_s=0, other_s=0
    )
    extent = max([time.total_s or 0.0, *(s.start_s + (s.duration_s or 0.0) for s in spans), 0.001])
    return TimelinePage(
        run_id=run_id,
        cycle=cycle,
        cycles=cycles,
        spans=spans,
        extent_s=round(extent, 3),
        time=time,
        by_cycle=by_cycle,
    )


def _task_spans(
    conn: sqlite3.Connection, run_id: str, task: _Task, origin: datetime, status: str
) -> list[Span]:
    """A task's span; a message to the operator's: the wait for the reply (the
    operator's), then what the call took after it, if anything (the tool's)."""
    sent = task.at.get(WAIT[0])
    if sent is None:
        return [_span(conn, run_id, task, origin, status)]
    replied = task.at.get(WAIT[1])
    wait = Span(
        kind="operator",
        label=_wait_label(conn, run_id, task.key, replied is not None),
        start_s=_seconds(origin, sent),
        duration_s=_seconds(sent, replied) if replied is not None else None,
        seq=task.seq,
        ok=replied is not None or status not in ("failed", "cancelled", "stopped"),
    )
    if replied is None or task.end is None or task.end <= replied:
        return [wait]
    after = Span(
        kind="tool",
        label="send_message_to_operator: the reply back to the agent",
        start_s=_seconds(origin, replied),
        duration_s=_seconds(replied, task.end),
        seq=task.seq,
        ok=task.ok,
    )
    return [wait, after]


def _wait_label(conn: sqlite3.Connection, run_id: str, task_id: str, replied: bool) -> str:
    if not replied:
        return "message to the operator: waiting for the reply"
    row = conn.execute(
        "SELECT replied_by FROM operator WHERE run_id = ? AND task_id = ?", (run_id, task_id)
    ).fetchone()
    by = row[0] if row else None
    if by == "timeout":
        return "message to the operator: no reply in time (the automatic reply stood in)"
    if by == "policy":
        return "message to the operator, until the automatic reply"
    return "message to the operator, until the reply"


def _span(
    conn: sqlite3.Connection, run_id: str, task: _Task, origin: datetime, status: str
) -> Span:
    row = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND seq = ?", (run_id, task.seq)
    ).fetchone()
    event = event_from_json(bytes(row[0]))
    label = task.types[0]
    ok = task.ok
    match task.kind:
        case "llm":
            label = f"LLM call, step {getattr(event, 'step', '?')}"
        case "tool":
            label = str(getattr(event, "tool_name", "tool"))
            ok = ok and not getattr(event, "arguments_error", None)
        case "embedding":
            label = "embedding"
        case "other" if label == "OperatorMessageAnalysisRequested":
            label = "the exchange's analysis"
    if task.end is None and status in ("failed", "cancelled", "stopped"):
        ok = False
    return Span(
        kind=task.kind,
        label=label,
        start_s=_seconds(origin, task.start),
        duration_s=_seconds(task.start, task.end) if task.end is not None else None,
        seq=task.seq,
        ok=ok,
    )
