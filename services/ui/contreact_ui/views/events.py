"""The event log viewer: the log a page at a time, one event with its task, and the
log as stored (a download)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from contreact_events.wire.codec import bulk, event_from_json
from contreact_ui.exceptions import BadQuery
from contreact_ui.models import EventDetail, EventFilters, EventRowView, EventsPage
from contreact_ui.read_models import describe
from contreact_ui.views.runs import run_row

EVENT_COLUMNS = "seq, type, ts, cycle, task_key, payload"
BY_CYCLE_OVER = 20
"""A run of more cycles opens its log a cycle at a time."""


def event_view(
    row: sqlite3.Row, *, payload: bool = False, started: str | None = None
) -> EventRowView:
    """An event row of the store as the log shows it (its one-line summary made here);
    ``started``: when its task's request was logged, for an answer's duration."""
    event = event_from_json(bytes(row["payload"]))
    duration = None
    if started is not None and started != row["ts"]:
        took = datetime.fromisoformat(row["ts"]) - datetime.fromisoformat(started)
        duration = round(took.total_seconds(), 3)
    return EventRowView(
        seq=row["seq"],
        type=row["type"],
        ts=row["ts"],
        cycle=row["cycle"],
        task_key=row["task_key"],
        summary=describe(event),
        payload=event.model_dump(mode="json") if payload else None,
        duration_s=duration,
    )


def task_starts(conn: sqlite3.Connection, run_id: str, rows: list[sqlite3.Row]) -> dict[str, str]:
    """task key -> the time of the task's first event, for the tasks of ``rows``."""
    keys = sorted({r["task_key"] for r in rows if r["task_key"]})
    starts: dict[str, str] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        for key, ts in conn.execute(
            "SELECT task_key, ts FROM events WHERE run_id = ? AND task_key IN "
            f"({', '.join('?' * len(chunk))}) ORDER BY seq DESC",
            [run_id, *chunk],
        ):
            starts[key] = ts  # the earliest wins (descending order)
    return starts


def events_page(
    conn: sqlite3.Connection, run_id: str, filters: EventFilters, *, chosen_limit: bool = True
) -> EventsPage:
    """``chosen_limit``: the request named a limit (a long run's log opens by cycle
    only when nothing was asked for)."""
    run = run_row(conn, run_id)
    last_cycle = max(run.cycle, 0)
    by_cycle = (
        filters.cycle is None
        and not filters.type
        and filters.after == 0
        and not chosen_limit
        and last_cycle > BY_CYCLE_OVER
    )
    if by_cycle:
        filters = filters.model_copy(update={"cycle": 0})
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
    starts = task_starts(conn, run_id, rows)
    with bulk():
        events = [
            event_view(r, payload=True, started=starts.get(r["task_key"] or "")) for r in rows
        ]
    return EventsPage.model_validate(
        {
            "run_id": run_id,
            "events": events,
            "total": total,
            "types": types,
            "filters": filters,
            "next_after": rows[-1]["seq"] if more and rows else None,
            "last_cycle": last_cycle,
            "by_cycle": by_cycle,
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
    related_rows = []
    if row["task_key"]:
        related_rows = conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND task_key = ? "
            "AND seq != ? ORDER BY seq",
            (run_id, row["task_key"], seq),
        ).fetchall()
    started = min([row["ts"], *(r["ts"] for r in related_rows)]) if related_rows else None
    related = [event_view(r, started=started) for r in related_rows]
    return EventDetail(
        run_id=run_id,
        event=event_view(row, started=started),
        entry_id=row["entry_id"],
        payload=event_from_json(bytes(row["payload"])).model_dump(mode="json"),
        related=related,
        previous=seq - 1 if seq > 1 else None,
        next=seq + 1 if seq < run.events else None,
    )


def events_jsonl(conn: sqlite3.Connection, run_id: str) -> list[bytes]:
    """The run's stored events; ``BadQuery`` naming why for a run whose log could not
    be read to its end (what is stored here stops at the problem: the download would
    pass for the whole run, or for an empty one)."""
    run = run_row(conn, run_id)
    if run.log_cut_short:
        raise BadQuery(
            f"run {run_id}: {run.cut_short_reason}: no download "
            f"of part of it; `contreact replay {run_id} --check` says where it breaks"
        )
    return [
        bytes(r[0]) + b"\n"
        for r in conn.execute("SELECT payload FROM events WHERE run_id = ? ORDER BY seq", (run_id,))
    ]
