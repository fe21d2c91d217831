"""Assessments on the pages: Table 2 of the runs a compare page shows, the ratings
behind each of its cells with the raw answers, and a run's own assessments.

The records become a ratings frame and the matrix through ``contreact_analysis`` (the
code the CLI's ``contreact assess matrix`` runs), imported when a page first has
records to show: pandas and the statistics libraries take seconds to load."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from contreact_events.catalog.assessment import AssessmentEvent
from contreact_ui.assessments import (
    MAX_ROWS,
    RAW_LIMIT,
    AssessmentReader,
    AssessmentRow,
    History,
    RatingsPage,
    Table2Live,
    history_of,
)
from contreact_ui.exceptions import RunNotProjected

MAX_RUNS = 500


def select_runs(
    conn: sqlite3.Connection, runs: Sequence[str], models: Sequence[str], experiment: str | None
) -> list[History]:
    """The runs named, else those of the models and experiment given (as on /compare)."""
    if runs:
        marks = ", ".join("?" * len(runs))
        found = {
            r[0]: r
            for r in conn.execute(
                f"SELECT run_id, model, experiment FROM runs WHERE run_id IN ({marks})", list(runs)
            )
        }
        missing = [r for r in runs if r not in found]
        if missing:
            raise RunNotProjected(f"no run {', '.join(map(repr, missing))} here (see /runs)")
        rows = [found[r] for r in dict.fromkeys(runs)]
    else:
        where, args = [], []
        if models:
            where.append(f"model IN ({', '.join('?' * len(models))})")
            args += list(models)
        if experiment:
            where.append("experiment = ?")
            args.append(experiment)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = conn.execute(
            f"SELECT run_id, model, experiment FROM runs {clause} "
            "ORDER BY model, created_at, run_id LIMIT ?",
            [*args, MAX_RUNS],
        ).fetchall()
    return [history_of(r[0], r[1], r[2]) for r in rows]


def _frame(histories: Sequence[History], records: dict[str, list[AssessmentEvent]]) -> Any:
    from contreact_analysis.assessments.frame import RatedRun, ratings_frame

    runs = [RatedRun(h.run_id, h.label, h.replica, h.model) for h in histories]
    return ratings_frame([r for h in histories for r in records.get(h.run_id, [])], runs)


def table2_live(
    conn: sqlite3.Connection,
    reader: AssessmentReader,
    run_ids: Sequence[str],
    *,
    experiment: str | None,
    ratings_query: str,
) -> Table2Live:
    histories = select_runs(conn, run_ids, (), None) if run_ids else []
    records, note = reader.records([h.run_id for h in histories])
    count = sum(len(v) for v in records.values())
    if not count:
        return Table2Live(
            runs=len(histories), records=0, matrix=None, ratings_query=ratings_query, note=note
        )
    key = (
        tuple(histories),
        experiment,
        tuple(sorted(e.event_id for v in records.values() for e in v)),
    )

    def build() -> Any:
        from contreact_analysis.assessments.matrix import build_matrix

        order = list(dict.fromkeys(h.label for h in histories))
        return build_matrix(_frame(histories, records), experiment=experiment, history_order=order)

    return Table2Live(
        runs=len(histories),
        records=count,
        matrix=reader.matrix(key, build),
        ratings_query=ratings_query,
        note=note,
    )


def ratings_page(
    conn: sqlite3.Connection,
    reader: AssessmentReader,
    *,
    runs: Sequence[str],
    models: Sequence[str],
    experiment: str | None,
    history: str | None,
    evaluator: str | None,
    instrument: str | None,
    status: str | None,
) -> RatingsPage:
    histories = select_runs(conn, runs, models, experiment)
    records, note = reader.records([h.run_id for h in histories])
    rows = assessment_rows(histories, records) if any(records.values()) else []
    wanted = [
        r
        for r in rows
        if (history is None or r.history == history)
        and (evaluator is None or r.evaluator == evaluator)
        and (instrument is None or r.instrument == instrument)
        and (status is None or r.status == status)
    ]
    counts: dict[str, int] = {}
    for row in wanted:
        counts[row.status] = counts.get(row.status, 0) + 1
    return RatingsPage(
        experiment=experiment,
        runs=list(runs),
        models=list(models),
        history=history,
        evaluator=evaluator,
        instrument=instrument,
        status=status,
        rows=wanted[:MAX_ROWS],
        total=len(wanted),
        counts=counts,
        note=note,
    )


def assessment_rows(
    histories: Sequence[History], records: dict[str, list[AssessmentEvent]]
) -> list[AssessmentRow]:
    """The records as rows, in the order of the histories, then as recorded."""
    frame = _frame(histories, records)
    frame = frame.astype(object).where(frame.notna(), None)  # NA, NaN, NaT: None
    out = []
    for row in frame.to_dict("records"):
        raw = str(row["raw"])
        value = row["value"]
        out.append(
            AssessmentRow(
                run_id=row["run_id"],
                history=row["history_model"],
                replica=row["replica"],
                evaluator=row["evaluator"],
                evaluator_model=row["evaluator_model"],
                instrument=row["instrument"],
                repeat=int(row["repeat"]),
                status=row["status"],
                value=None if value is None else float(value),
                label=_text(row["label"]),
                reason=_text(row["reason"]),
                note=str(row["note"]),
                raw=raw[:RAW_LIMIT],
                raw_chars=len(raw),
                raw_truncated=len(raw) > RAW_LIMIT,
                ts=None if row["ts"] is None else row["ts"].to_pydatetime(),
                event_id=row["event_id"],
                read_by=_text(row["read_by"]),
                reader=_text(row["reader"]),
                read_at=None if row["read_at"] is None else row["read_at"].to_pydatetime(),
            )
        )
    return out


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_assessments(
    conn: sqlite3.Connection, reader: AssessmentReader, run_id: str
) -> tuple[list[AssessmentRow], str | None]:
    """A run's own assessments (for its page)."""
    histories = select_runs(conn, [run_id], (), None)
    records, note = reader.records([run_id])
    if not records.get(run_id):
        return [], note
    return assessment_rows(histories, records), note
