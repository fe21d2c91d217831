"""The runs list, and the run rows the other pages and the live stream show."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import timedelta

from pydantic import TypeAdapter

from contreact_ui.exceptions import RunNotProjected
from contreact_ui.models import FilterOptions, RunFilters, RunRow, RunSort, RunsPage

RUN_COLUMNS = ", ".join(RunRow.model_fields)
FILTER_FIELDS = ("status", "model", "backend", "experiment")
RUN_ROW = TypeAdapter(RunRow)
SORTS: dict[RunSort, str] = {
    "run_id": "run_id",
    "status": "status",
    "model": "model",
    "backend": "backend",
    "host": "host",
    "experiment": "experiment",
    "cycle": "cycle",
    "step": "step",
    "llm_calls": "llm_calls",
    "tokens": "prompt_tokens + completion_tokens",
    "cost": "cost",
    "memory_keys": "memory_keys",
    "created_at": "created_at",
    "updated_at": "updated_at",
}
"""What the runs can be ordered by: every column of the table, by name."""


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
    if filters.since:  # timestamps are stored in UTC, ISO 8601: text order is time order
        where.append("created_at >= ?")
        args.append(filters.since.isoformat())
    if filters.until:
        where.append("created_at < ?")
        args.append((filters.until + timedelta(days=1)).isoformat())
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    total = conn.execute(f"SELECT count(*) FROM runs {clause}", args).fetchone()[0]
    column = SORTS[filters.sort]
    order = "DESC" if filters.order == "desc" else "ASC"
    rows = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs {clause} "
        f"ORDER BY {column} IS NULL, {column} {order}, run_id LIMIT ? OFFSET ?",
        [*args, filters.limit, filters.offset],
    ).fetchall()
    options = FilterOptions(**{name: distinct(conn, name) for name in FILTER_FIELDS})
    return RunsPage(
        runs=[run_row_of(r) for r in rows], total=total, filters=filters, options=options
    )


def run_rows(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[RunRow]:
    if not run_ids:
        return []
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id IN ({marks})", run_ids)
    return [run_row_of(r) for r in rows]


def run_row(conn: sqlite3.Connection, run_id: str) -> RunRow:
    row = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotProjected(
            f"no run '{run_id}' here yet: the dashboard shows runs once their first event "
            "is logged (see /runs)"
        )
    return run_row_of(row)


def run_row_of(row: sqlite3.Row) -> RunRow:
    return RUN_ROW.validate_python(dict(row))


def distinct(conn: sqlite3.Connection, column: str) -> list[str]:
    """The values of a column of the runs table (a filter's options)."""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT {column} FROM runs WHERE {column} != '' ORDER BY {column}"
        )
    ]
