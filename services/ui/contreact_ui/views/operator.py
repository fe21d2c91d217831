"""A run's operator exchanges, each with its analysis (``OperatorMessageAnalyzed``):
all of them as the log ends (the run page), or as they stood after any event (the
replay page)."""

from __future__ import annotations

import dataclasses
import sqlite3

import orjson
from pydantic import TypeAdapter

from contreact_ui.models import OperatorExchange, analysis_status

OPERATOR_EXCHANGE = TypeAdapter(OperatorExchange)
COLUMNS = (
    "task_id, cycle, message, sent_at, reply, replied_by, replied_at, sent_seq, replied_seq, "
    "analysis_requested, analysis_requested_seq, analysis, analysis_seq"
)


def operator_exchanges(
    conn: sqlite3.Connection,
    run_id: str,
    *,
    cycles: tuple[int, int] | None = None,
    upto_seq: int | None = None,
    latest: int | None = None,
) -> tuple[list[OperatorExchange], int]:
    """The exchanges in the order they were sent, and how many the run has (by then):
    with ``cycles``, those of the cycles ``first`` to ``last``; with ``upto_seq``, those
    sent by then, each as it stood after that event (its reply and analysis not yet
    given are left out); with ``latest``, only the newest that many."""
    where = "run_id = ?"
    params: list[object] = [run_id]
    if upto_seq is not None:
        where += " AND sent_seq <= ?"
        params.append(upto_seq)
    total = int(conn.execute(f"SELECT count(*) FROM operator WHERE {where}", params).fetchone()[0])
    if cycles is not None:
        where += " AND cycle BETWEEN ? AND ?"
        params.extend(cycles)
    query = f"SELECT {COLUMNS} FROM operator WHERE {where} ORDER BY sent_seq DESC, task_id DESC"
    if latest is not None:
        query += " LIMIT ?"
        params.append(latest)
    out = []
    for r in reversed(conn.execute(query, params).fetchall()):
        row = dict(r)
        if row["analysis"] is not None:
            row["analysis"] = orjson.loads(row["analysis"])
        exchange = OPERATOR_EXCHANGE.validate_python(row)
        if upto_seq is not None:
            exchange = as_of(exchange, upto_seq)
        exchange.analysis_status = analysis_status(exchange)
        out.append(exchange)
    return out, total


def as_of(exchange: OperatorExchange, seq: int) -> OperatorExchange:
    """The exchange as it stood after event ``seq``."""
    changes: dict[str, object] = {}
    if exchange.replied_seq is not None and exchange.replied_seq > seq:
        changes |= {"reply": None, "replied_by": None, "replied_at": None, "replied_seq": None}
    if exchange.analysis_requested_seq is not None and exchange.analysis_requested_seq > seq:
        changes |= {"analysis_requested": None, "analysis_requested_seq": None}
    if exchange.analysis_seq is not None and exchange.analysis_seq > seq:
        changes |= {"analysis": None, "analysis_seq": None}
    return dataclasses.replace(exchange, **changes) if changes else exchange  # type: ignore[arg-type]
