"""One function per page: reads the projection store (read-only) and returns the
page's model. The HTML and the JSON of a page both come from here."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import orjson

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.catalog.diversity import SimilarityLevel
from contreact_events.core.fold import fold
from contreact_events.core.prompt import prompt_messages
from contreact_events.core.state import AgentState
from contreact_events.wire.codec import bulk, event_from_json
from contreact_ui import paper
from contreact_ui.exceptions import BadQuery, RunNotProjected
from contreact_ui.models import (
    CompareGroup,
    ComparePage,
    CycleSeries,
    CycleView,
    EventDetail,
    EventFilters,
    EventRowView,
    EventsPage,
    FilterOptions,
    Link,
    MemoryEntry,
    MemoryPage,
    OperatorExchange,
    PaperTable2,
    PromptMessage,
    RegenerationAttempt,
    ReplayPage,
    RunFilters,
    RunPage,
    RunRow,
    RunsPage,
    SimilarityMatrix,
    Table1Row,
)
from contreact_ui.read_models import describe, state_from_snapshot
from contreact_ui.store import METRIC_FIELDS

RUN_COLUMNS = (
    "run_id, status, model, resolved_model, backend, experiment, cycle, cycle_count, step, "
    "llm_calls, prompt_tokens, completion_tokens, events, memory_keys, failure_reason, "
    "created_at, updated_at, source, projection_error"
)
FILTER_FIELDS = ("status", "model", "backend", "experiment")
MAX_COMPARE_RUNS = 500

LEVEL_RANK: dict[SimilarityLevel, int] = {"none": 0, "moderate": 1, "high": 2}


# --- runs -------------------------------------------------------------------------


def runs_page(conn: sqlite3.Connection, filters: RunFilters) -> RunsPage:
    where, args = [], []
    for name in FILTER_FIELDS:
        value = getattr(filters, name)
        if value:
            where.append(f"{name} = ?")
            args.append(value)
    if filters.q:
        where.append("instr(run_id, ?) > 0")
        args.append(filters.q)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    total = conn.execute(f"SELECT count(*) FROM runs {clause}", args).fetchone()[0]
    rows = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs {clause} "
        "ORDER BY created_at IS NULL, created_at DESC, run_id LIMIT ? OFFSET ?",
        [*args, filters.limit, filters.offset],
    ).fetchall()
    options = FilterOptions(
        **{
            name: [
                r[0]
                for r in conn.execute(
                    f"SELECT DISTINCT {name} FROM runs WHERE {name} != '' ORDER BY {name}"
                )
            ]
            for name in FILTER_FIELDS
        }
    )
    return RunsPage(runs=[_run_row(r) for r in rows], total=total, filters=filters, options=options)


def run_rows(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[RunRow]:
    if not run_ids:
        return []
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id IN ({marks})", run_ids)
    return [_run_row(r) for r in rows]


def run_row(conn: sqlite3.Connection, run_id: str) -> RunRow:
    row = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotProjected(
            f"no run '{run_id}' here yet: the dashboard shows runs once their first event "
            "is logged (see /runs)"
        )
    return _run_row(row)


def _run_row(row: sqlite3.Row) -> RunRow:
    return RunRow.model_validate(dict(row))


# --- a run -------------------------------------------------------------------------


def run_page(conn: sqlite3.Connection, run_id: str) -> RunPage:
    run = run_row(conn, run_id)
    cycles = cycle_views(conn, run_id)
    config = _config(conn, run_id)
    diversity = (config or {}).get("diversity") or {}
    similarity = similarity_matrix(
        conn,
        run_id,
        float(diversity.get("high_threshold", 0.8)),
        float(diversity.get("moderate_threshold", 0.7)),
    )
    operator = [
        OperatorExchange.model_validate(dict(r))
        for r in conn.execute(
            "SELECT task_id, cycle, message, sent_at, reply, replied_by, replied_at "
            "FROM operator WHERE run_id = ? ORDER BY sent_at, task_id",
            (run_id,),
        )
    ]
    regenerations = [
        RegenerationAttempt.model_validate({**dict(r), "is_unique": bool(r["is_unique"])})
        for r in conn.execute(
            "SELECT cycle, attempt, text, similarity, is_unique, feedback, matches, paragraphs, "
            "outcome FROM attempts WHERE run_id = ? ORDER BY cycle, attempt",
            (run_id,),
        )
    ]
    base = f"/runs/{quote(run_id)}"
    exports = [
        Link(label="this page as JSON", href=f"{base}.json"),
        Link(label="run log (events JSONL, as archived)", href=f"{base}/events.jsonl"),
        Link(label="seed-003 LogRecords (JSONL)", href=f"{base}/export.jsonl"),
        Link(label="per-cycle metrics (CSV)", href=f"{base}/cycles.csv"),
    ]
    return RunPage(
        run=run,
        cycles=cycles,
        similarity=similarity,
        operator=operator,
        regenerations=regenerations,
        config=config,
        exports=exports,
    )


def cycle_views(conn: sqlite3.Connection, run_id: str) -> list[CycleView]:
    out = []
    for r in conn.execute("SELECT * FROM cycles WHERE run_id = ? ORDER BY cycle", (run_id,)):
        row = dict(r)
        metrics = CycleMetrics.model_validate({name: row.pop(name) for name in METRIC_FIELDS})
        row.pop("run_id")
        row["tools"] = orjson.loads(row["tools"])
        row["reflection_complete"] = bool(row["reflection_complete"])
        row["topic_exhausted"] = bool(row["topic_exhausted"])
        out.append(CycleView.model_validate({**row, "metrics": metrics}))
    return out


def similarity_matrix(
    conn: sqlite3.Connection, run_id: str, high: float, moderate: float
) -> SimilarityMatrix:
    pairs = conn.execute(
        "SELECT cycle, other, value FROM similarities WHERE run_id = ?", (run_id,)
    ).fetchall()
    embedded = {
        r[0]
        for r in conn.execute(
            "SELECT cycle FROM events WHERE run_id = ? AND type = 'ReflectionEmbedded'",
            (run_id,),
        )
    }
    cycles = sorted(embedded | {p[0] for p in pairs} | {p[1] for p in pairs})
    index = {c: i for i, c in enumerate(cycles)}
    values: list[list[float | None]] = [[None] * len(cycles) for _ in cycles]
    for cycle, other, value in pairs:
        values[index[cycle]][index[other]] = value
        values[index[other]][index[cycle]] = value
    for c, i in index.items():
        if c in embedded:
            values[i][i] = 1.0
    return SimilarityMatrix(
        cycles=cycles, values=values, high_threshold=high, moderate_threshold=moderate
    )


def _config(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND type IN ('RunStarted', 'RunRequested') "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    event = event_from_json(bytes(row[0]))  # upcast: older runs read as current configs
    config: dict[str, Any] = event.model_dump(mode="json").get("config") or {}
    return config


def cycles_csv(conn: sqlite3.Connection, run_id: str) -> str:
    run_row(conn, run_id)
    header = ["cycle", *METRIC_FIELDS, "level", "max_similarity", "most_similar_cycle"]
    lines = [",".join(header)]
    for view in cycle_views(conn, run_id):
        metrics = view.metrics.model_dump()
        values: list[Any] = [view.cycle, *(metrics[name] for name in METRIC_FIELDS)]
        values += [view.level or "", view.max_similarity or "", view.most_similar_cycle or ""]
        lines.append(",".join(str(v) for v in values))
    return "\n".join(lines) + "\n"


# --- memory ------------------------------------------------------------------------


def memory_page(conn: sqlite3.Connection, run_id: str, cycle: int | None) -> MemoryPage:
    run = run_row(conn, run_id)
    cycles = [
        r[0]
        for r in conn.execute("SELECT cycle FROM cycles WHERE run_id = ? ORDER BY cycle", (run_id,))
    ]
    shown = cycle if cycle is not None else (cycles[-1] if cycles else 0)
    if shown < 0 or (cycles and shown > cycles[-1]) or (not cycles and shown != 0):
        raise BadQuery(f"run {run_id} has cycles 1 to {run.cycle}: cycle={shown} does not exist")
    changes = conn.execute(
        "SELECT seq, cycle, key, change, value FROM memory_changes "
        "WHERE run_id = ? AND cycle <= ? ORDER BY seq",
        (run_id, shown),
    ).fetchall()
    entries = memory_entries(changes, shown, upto_seq=None)
    return MemoryPage(
        run_id=run_id,
        cycle=shown,
        cycles=cycles,
        entries=entries,
        keys=sum(1 for e in entries if e.change != "deleted"),
    )


def memory_entries(
    changes: Sequence[sqlite3.Row | tuple[Any, ...]], cycle: int, *, upto_seq: int | None
) -> list[MemoryEntry]:
    """Memory after the given changes (log order), with what happened to each key in
    ``cycle``: compared with memory as it stood when the cycle began."""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    last: dict[str, int] = {}
    for seq, change_cycle, key, change, value in changes:
        if upto_seq is not None and seq > upto_seq:
            break
        for target in (after, before) if change_cycle < cycle else (after,):
            if change == "deleted":
                target.pop(key, None)
            else:
                target[key] = value
        last[key] = change_cycle
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.append(
                MemoryEntry(key=key, value=None, change="deleted", last_changed_cycle=last[key])
            )
            continue
        kind = None
        if key not in before:
            kind = "added"
        elif before[key] != after[key]:
            kind = "changed"
        out.append(
            MemoryEntry(key=key, value=after[key], change=kind, last_changed_cycle=last[key])
        )
    return out


# --- events ------------------------------------------------------------------------

EVENT_COLUMNS = "seq, type, ts, cycle, task_key, payload"


def event_view(row: sqlite3.Row, *, payload: bool = False) -> EventRowView:
    """An event row of the store as the log shows it (its one-line summary made here)."""
    event = event_from_json(bytes(row["payload"]))
    return EventRowView(
        seq=row["seq"],
        type=row["type"],
        ts=row["ts"],
        cycle=row["cycle"],
        task_key=row["task_key"],
        summary=describe(event),
        payload=event.model_dump(mode="json") if payload else None,
    )


def events_page(conn: sqlite3.Connection, run_id: str, filters: EventFilters) -> EventsPage:
    run_row(conn, run_id)
    where: list[str] = ["run_id = ?"]
    args: list[str | int] = [run_id]
    if filters.type:
        where.append(f"type IN ({', '.join('?' * len(filters.type))})")
        args += filters.type
    if filters.cycle is not None:
        where.append("cycle = ?")
        args.append(filters.cycle)
    clause = " AND ".join(where)
    total = conn.execute(f"SELECT count(*) FROM events WHERE {clause}", args).fetchone()[0]
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE {clause} AND seq > ? ORDER BY seq LIMIT ?",
        [*args, filters.after, filters.limit + 1],
    ).fetchall()
    more = len(rows) > filters.limit
    rows = rows[: filters.limit]
    types = [
        {"type": r[0], "count": r[1]}
        for r in conn.execute(
            "SELECT type, count(*) FROM events WHERE run_id = ? GROUP BY type ORDER BY type",
            (run_id,),
        )
    ]
    with bulk():
        events = [event_view(r, payload=True) for r in rows]
    return EventsPage.model_validate(
        {
            "run_id": run_id,
            "events": events,
            "total": total,
            "types": types,
            "filters": filters,
            "next_after": rows[-1]["seq"] if more and rows else None,
        }
    )


def event_detail(conn: sqlite3.Connection, run_id: str, seq: int) -> EventDetail:
    run = run_row(conn, run_id)
    row = conn.execute(
        f"SELECT {EVENT_COLUMNS}, entry_id FROM events WHERE run_id = ? AND seq = ?",
        (run_id, seq),
    ).fetchone()
    if row is None:
        raise BadQuery(f"run {run_id} has events 1 to {run.events}: there is no event {seq}")
    related = []
    if row["task_key"]:
        related = [
            event_view(r)
            for r in conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND task_key = ? "
                "AND seq != ? ORDER BY seq",
                (run_id, row["task_key"], seq),
            )
        ]
    return EventDetail(
        run_id=run_id,
        event=event_view(row),
        entry_id=row["entry_id"],
        payload=event_from_json(bytes(row["payload"])).model_dump(mode="json"),
        related=related,
        previous=seq - 1 if seq > 1 else None,
        next=seq + 1 if seq < run.events else None,
    )


def events_jsonl(conn: sqlite3.Connection, run_id: str) -> list[bytes]:
    run_row(conn, run_id)
    return [
        bytes(r[0]) + b"\n"
        for r in conn.execute("SELECT payload FROM events WHERE run_id = ? ORDER BY seq", (run_id,))
    ]


# --- replay ------------------------------------------------------------------------


def replay_page(
    conn: sqlite3.Connection, run_id: str, seq: int | None, cycle: int | None
) -> ReplayPage:
    """The fold's state after ``seq`` events: from the nearest snapshot before it,
    folding at most ``SNAPSHOT_EVERY`` cycles of stored events."""
    run = run_row(conn, run_id)
    starts = [
        [r[0], r[1]]
        for r in conn.execute(
            "SELECT cycle, seq FROM events WHERE run_id = ? AND type = 'CycleStarted' ORDER BY seq",
            (run_id,),
        )
    ]
    if cycle is not None:
        match = [s for c, s in starts if c == cycle]
        if not match:
            raise BadQuery(f"run {run_id} has no cycle {cycle} (it has {len(starts)})")
        seq = match[0]
    at = run.events if seq is None else seq
    if at < 0 or at > run.events:
        raise BadQuery(f"run {run_id} has events 0 to {run.events}: seq={at} is outside")
    snap = conn.execute(
        "SELECT seq, state FROM snapshots WHERE run_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
        (run_id, at),
    ).fetchone()
    state = state_from_snapshot(bytes(snap[1])) if snap else AgentState(run_id=run_id)
    tail = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
        (run_id, state.seq, at),
    ).fetchall()
    with bulk():
        for (payload,) in tail:
            state = fold(state, event_from_json(bytes(payload)))
    event_row = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND seq = ?", (run_id, at)
    ).fetchone()
    changes = conn.execute(
        "SELECT seq, cycle, key, change, value FROM memory_changes "
        "WHERE run_id = ? AND seq <= ? ORDER BY seq",
        (run_id, at),
    ).fetchall()
    prompt = [
        PromptMessage(
            role=m.role,
            content=m.content,
            tool_calls=[c.model_dump(mode="json") for c in m.tool_calls],
            tool_name=m.tool_name,
        )
        for m in (prompt_messages(state) if state.config else ())
    ]
    pending = state.pending_task_id
    return ReplayPage(
        run_id=run_id,
        seq=at,
        total=run.events,
        event=event_view(event_row) if event_row else None,
        status=state.status,
        phase=state.phase,
        cycle=state.cycle_number,
        step=state.step,
        advisory=state.advisory,
        next_advisory=state.next_advisory,
        memory=memory_entries(changes, state.cycle_number, upto_seq=at),
        prompt=prompt,
        prompt_is_next=state.phase in ("calling", "awaiting_llm"),
        metrics=state.metrics,
        cycle_metrics=list(state.cycle_metrics),
        pending_task=pending,
        cycle_starts=starts,
    )


# --- compare -----------------------------------------------------------------------

TABLE1 = (
    ("memory_tools", "Memory operations", "memory_ops_total", 1.0),
    ("messages", "Messages to the operator", "messages_to_operator", 1.0),
    ("memory_keys", "Final unique memory keys", None, 1.0),
    ("reflection_kchars", "Reflection characters (k)", "reflection_chars", 1000.0),
    ("response_kchars", "Response characters (k)", "response_chars", 1000.0),
    ("memory_write_kchars", "Memory-write characters (k)", "memory_write_chars", 1000.0),
)
SERIES = {
    "memory_ops_total": "Memory operations",
    "messages_to_operator": "Messages to the operator",
    "tool_calls": "Tool calls",
    "response_chars": "Response characters",
    "reflection_chars": "Reflection characters",
    "tokens": "Tokens (prompt + completion)",
    "llm_seconds": "LLM time (s)",
    "max_similarity": "Max similarity to an earlier reflection",
}


def compare_page(
    conn: sqlite3.Connection,
    *,
    runs: Sequence[str],
    models: Sequence[str],
    experiment: str | None,
    by: str | None,
) -> ComparePage:
    selected = _select_runs(conn, runs, models, experiment)
    rows = run_rows(conn, selected)
    order = {run_id: i for i, run_id in enumerate(selected)}
    rows.sort(key=lambda r: order[r.run_id])
    grouping = by or ("run" if runs else "model")
    if grouping not in ("model", "run", "experiment"):
        raise BadQuery(f"by={grouping!r}: group by model, run or experiment")
    groups: dict[str, list[RunRow]] = {}
    for row in rows:
        label = {"model": row.model, "run": row.run_id, "experiment": row.experiment}[grouping]
        groups.setdefault(label or "(none)", []).append(row)
    totals = _run_totals(conn, selected)
    per_cycle = _per_cycle(conn, selected)
    table1 = []
    reference = paper.table1()
    for metric, label, source, scale in TABLE1:
        ours: list[float | None] = []
        for members in groups.values():
            figures = [
                (row.memory_keys if source is None else totals.get(row.run_id, {}).get(source, 0))
                / scale
                for row in members
            ]
            ours.append(round(sum(figures) / len(figures), 3) if figures else None)
        table1.append(
            Table1Row(metric=metric, label=label, ours=ours, paper=reference.rows.get(metric, []))
        )
    series = []
    for label, members in groups.items():
        cycles = sorted({c for row in members for c in per_cycle.get(row.run_id, {})})
        values: dict[str, list[float | None]] = {}
        for metric in SERIES:
            column: list[float | None] = []
            for c in cycles:
                samples = [
                    v
                    for row in members
                    if (v := per_cycle.get(row.run_id, {}).get(c, {}).get(metric)) is not None
                ]
                column.append(round(sum(samples) / len(samples), 4) if samples else None)
            values[metric] = column
        series.append(CycleSeries(label=label, cycles=cycles, values=values))
    t2 = paper.table2()
    return ComparePage(
        by=grouping,
        selected_runs=list(runs),
        selected_models=list(models),
        experiment=experiment,
        groups=[
            CompareGroup(
                label=label,
                runs=[r.run_id for r in members],
                models=sorted({r.model for r in members}),
            )
            for label, members in groups.items()
        ],
        table1=table1,
        paper_columns=reference.columns,
        series=series,
        metrics=SERIES,
        available_models=_distinct(conn, "model"),
        available_experiments=_distinct(conn, "experiment"),
        available_runs=[
            r[0]
            for r in conn.execute(
                "SELECT run_id FROM runs ORDER BY created_at DESC LIMIT ?", (MAX_COMPARE_RUNS,)
            )
        ],
        table2=PaperTable2(
            evaluators=t2.evaluators,
            histories=t2.histories,
            inter_rater_correlation=t2.inter_rater_correlation,
        ),
        assessments_available=paper.assessments_available(),
        citation=paper.CITATION,
    )


def _select_runs(
    conn: sqlite3.Connection, runs: Sequence[str], models: Sequence[str], experiment: str | None
) -> list[str]:
    if runs:
        found = {r.run_id for r in run_rows(conn, runs)}
        missing = [r for r in runs if r not in found]
        if missing:
            raise RunNotProjected(f"no run {', '.join(map(repr, missing))} here (see /runs)")
        return list(dict.fromkeys(runs))
    where, args = [], []
    if models:
        where.append(f"model IN ({', '.join('?' * len(models))})")
        args += list(models)
    if experiment:
        where.append("experiment = ?")
        args.append(experiment)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT run_id FROM runs {clause} ORDER BY model, created_at LIMIT ?",
            [*args, MAX_COMPARE_RUNS],
        )
    ]


def _run_totals(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    if not run_ids:
        return {}
    columns = [c for _, _, c, _ in TABLE1 if c]
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(
        f"SELECT run_id, {', '.join(f'sum({c})' for c in columns)} FROM cycles "
        f"WHERE run_id IN ({marks}) GROUP BY run_id",
        list(run_ids),
    )
    return {r[0]: dict(zip(columns, r[1:], strict=True)) for r in rows}


def _per_cycle(
    conn: sqlite3.Connection, run_ids: Sequence[str]
) -> dict[str, dict[int, dict[str, float | None]]]:
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    out: dict[str, dict[int, dict[str, float | None]]] = {}
    for r in conn.execute(
        "SELECT run_id, cycle, memory_ops_total, messages_to_operator, tool_calls, "
        "response_chars, reflection_chars, prompt_tokens + completion_tokens AS tokens, "
        f"llm_seconds, max_similarity FROM cycles WHERE run_id IN ({marks})",
        list(run_ids),
    ):
        row = dict(r)
        out.setdefault(row.pop("run_id"), {})[row.pop("cycle")] = row
    return out


def _distinct(conn: sqlite3.Connection, column: str) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT {column} FROM runs WHERE {column} != '' ORDER BY {column}"
        )
    ]
