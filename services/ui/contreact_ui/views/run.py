"""A run's page: per-cycle metrics, the similarity matrix, operator exchanges,
regenerations, its configuration; and its metrics per cycle as CSV.

Long runs: the page shows 100 cycles in full (``?from_cycle=N`` picks the window, the
latest by default) and sends its charts only their figures; chart ticks are whole
numbers, at most about twelve; a cycle without an end is a shaded, labelled gap, never
a zero. Past 40 embedded reflections the similarity is a band, each cycle against the
20 before it (a 1,000-cycle run's matrix is half a million pairs), with the highest
similarity to any earlier one in the cycles table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import orjson
from pydantic import TypeAdapter

from contreact_events.catalog.control import SettingsChanged
from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.wire.codec import event_from_json
from contreact_ui.models import (
    ChartCycle,
    CycleView,
    CycleWindow,
    HistoryCut,
    Link,
    LiveChange,
    RegenerationAttempt,
    RunPage,
    SettingsChangeRow,
    SimilarityMatrix,
)
from contreact_ui.projection.tables import METRIC_FIELDS
from contreact_ui.read_models.rows import BAND_WIDTH
from contreact_ui.views.lineage import fork_origin, forks_of
from contreact_ui.views.operator import operator_exchanges
from contreact_ui.views.runs import run_row

MATRIX_MAX_CYCLES = 40
"""Past this many embedded reflections the similarity is shown as a band."""
WINDOW = 100
"""Cycles a run page shows in full (tables, reflections); the charts show every one."""

CYCLE_VIEW = TypeAdapter(CycleView)
CHART_CYCLE = TypeAdapter(ChartCycle)
CHART_CYCLES = TypeAdapter(list[ChartCycle])
REGENERATION_ATTEMPT = TypeAdapter(RegenerationAttempt)
HISTORY_CUT = TypeAdapter(HistoryCut)


def run_page(conn: sqlite3.Connection, run_id: str, from_cycle: int | None = None) -> RunPage:
    run = run_row(conn, run_id)
    chart = chart_cycles(conn, run_id)
    window = cycle_window([c.cycle for c in chart], from_cycle)
    cycles = cycle_views(conn, run_id, window.first, window.last)
    config = _config(conn, run_id)
    diversity = (config or {}).get("diversity") or {}
    similarity = similarity_matrix(
        conn,
        run_id,
        float(diversity.get("high_threshold", 0.8)),
        float(diversity.get("moderate_threshold", 0.7)),
    )
    operator, operator_total = operator_exchanges(
        conn, run_id, cycles=(window.first, window.last) if window.cycles else None
    )
    regenerations = [
        REGENERATION_ATTEMPT.validate_python({**dict(r), "is_unique": bool(r["is_unique"])})
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
        Link(label="start a new run from this config", href=f"/compose?from={quote(run_id)}"),
    ]
    return RunPage(
        run=run,
        cycles=cycles,
        window=window,
        chart=chart,
        similarity=similarity,
        operator=operator,
        operator_total=operator_total,
        regenerations=regenerations,
        config=config,
        exports=exports,
        fork_of=fork_origin(conn, run_id),
        forks=forks_of(conn, run_id),
        settings_changes=settings_changes(conn, run_id),
        history_cuts=history_cuts(conn, run_id, window.first, window.last),
    )


def history_cuts(conn: sqlite3.Connection, run_id: str, first: int, last: int) -> list[HistoryCut]:
    """Where the prompts of the cycles ``first`` to ``last`` left history out."""
    return [
        HISTORY_CUT.validate_python(dict(r))
        for r in conn.execute(
            "SELECT cycle, kind, seq, first_left_out, last_left_out, messages, calls, "
            "compaction_seq, compaction_model FROM history_cuts "
            "WHERE run_id = ? AND cycle BETWEEN ? AND ? ORDER BY cycle",
            (run_id, first, last),
        )
    ]


def settings_changes(conn: sqlite3.Connection, run_id: str) -> list[SettingsChangeRow]:
    """The settings changed while the run ran (``SettingsChanged``), in log order."""
    out = []
    for seq, payload in conn.execute(
        "SELECT seq, payload FROM events INDEXED BY events_settings "
        "WHERE run_id = ? AND type = 'SettingsChanged' ORDER BY seq",
        (run_id,),
    ):
        event = event_from_json(bytes(payload))
        assert isinstance(event, SettingsChanged)
        out.append(
            SettingsChangeRow(
                seq=seq,
                at=event.ts,
                cycle=event.cycle,
                by=event.by,
                reason=event.reason,
                changes=[
                    LiveChange(key=key, old=old, new=new)
                    for key, (old, new) in event.changes.items()
                ],
            )
        )
    return out


def cycle_window(numbers: list[int], from_cycle: int | None) -> CycleWindow:
    """The ``WINDOW`` cycles from ``from_cycle`` (default: the page of the latest ones,
    where a live run changes; pages start at the first cycle, every ``WINDOW``)."""
    if not numbers:
        return CycleWindow(first=0, last=0, size=WINDOW, cycles=0)
    low, high = numbers[0], numbers[-1]
    start = low + ((high - low) // WINDOW) * WINDOW if from_cycle is None else from_cycle
    first = min(max(start, low), high)
    return CycleWindow(
        first=first, last=min(first + WINDOW - 1, high), size=WINDOW, cycles=len(numbers)
    )


def chart_cycles(conn: sqlite3.Connection, run_id: str) -> list[ChartCycle]:
    rows = conn.execute(
        f"SELECT cycle, ended_by, level, tools, {', '.join(METRIC_FIELDS)} FROM cycles "
        "WHERE run_id = ? ORDER BY cycle",
        (run_id,),
    )
    return [
        CHART_CYCLE.validate_python(
            {
                "cycle": r["cycle"],
                "ended_by": r["ended_by"],
                "level": r["level"],
                "tools": orjson.loads(r["tools"]),
                "metrics": {name: r[name] for name in METRIC_FIELDS},
            }
        )
        for r in rows
    ]


def cycle_views(
    conn: sqlite3.Connection, run_id: str, first: int = 0, last: int = 10**9
) -> list[CycleView]:
    out = []
    for r in conn.execute(
        "SELECT * FROM cycles WHERE run_id = ? AND cycle BETWEEN ? AND ? ORDER BY cycle",
        (run_id, first, last),
    ):
        row = dict(r)
        metrics = CycleMetrics.model_validate({name: row.pop(name) for name in METRIC_FIELDS})
        row.pop("run_id")
        row["tools"] = orjson.loads(row["tools"])
        row["reflection_complete"] = bool(row["reflection_complete"])
        row["topic_exhausted"] = bool(row["topic_exhausted"])
        out.append(CYCLE_VIEW.validate_python({**row, "metrics": metrics}))
    return out


def chart_data(page: RunPage) -> dict[str, Any]:
    """The part of a run page its charts draw (not the reflections, advisories or
    configuration: a long run's page would carry its text twice)."""
    return {
        "run": {"run_id": page.run.run_id, "status": page.run.status},
        "cycles": CHART_CYCLES.dump_python(page.chart, mode="json"),
        "similarity": page.similarity.model_dump(mode="json"),
    }


def similarity_matrix(
    conn: sqlite3.Connection, run_id: str, high: float, moderate: float
) -> SimilarityMatrix:
    marks = conn.execute(
        "SELECT cycle, band FROM cycle_marks WHERE run_id = ? AND embedded ORDER BY cycle",
        (run_id,),
    ).fetchall()
    embedded = {r[0] for r in marks}
    if len(embedded) > MATRIX_MAX_CYCLES:
        return similarity_band(marks, high, moderate)
    pairs = conn.execute(
        "SELECT cycle, other, value FROM similarities WHERE run_id = ?", (run_id,)
    ).fetchall()
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


def similarity_band(
    marks: Sequence[sqlite3.Row | tuple[Any, ...]], high: float, moderate: float
) -> SimilarityMatrix:
    """Each embedded cycle against the ``BAND_WIDTH`` before it, as the projection
    keeps it per cycle (``cycle_marks.band``: the whole matrix of a 1,000-cycle run is
    half a million pairs)."""
    cycles = [r[0] for r in marks]
    band: list[list[float | None]] = [[None] * len(cycles) for _ in range(BAND_WIDTH)]
    for i, (_, column) in enumerate(marks):
        if column is not None:
            for lag, value in enumerate(orjson.loads(column)):
                band[lag][i] = value
    return SimilarityMatrix(
        cycles=cycles,
        view="band",
        values=[],
        band_width=BAND_WIDTH,
        band=band,
        high_threshold=high,
        moderate_threshold=moderate,
    )


def _config(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    # Each at most once, at the log's start: reading on from there stops at the second
    # (or, for a run not started yet, at the end of its short log).
    rows = conn.execute(
        "SELECT type, payload FROM events WHERE run_id = ? AND type IN ('RunStarted', "
        "'RunRequested') ORDER BY seq LIMIT 2",
        (run_id,),
    ).fetchall()
    if not rows:
        return None
    row = next((r for r in rows if r[0] == "RunStarted"), rows[0])
    event = event_from_json(bytes(row[1]))  # upcast: older runs read as current configs
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
