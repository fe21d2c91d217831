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
from contreact_events.config.run_places import ForkView, RunPlace, Selection
from contreact_ui.assessments import MAX_ROWS, AssessmentReader
from contreact_ui.exceptions import RunNotProjected
from contreact_ui.models.assessments import RAW_LIMIT, AssessmentRow, RatingsPage, Table2Live
from contreact_ui.views.places import counted, places_of

MAX_RUNS = 500


def select_runs(
    conn: sqlite3.Connection,
    runs: Sequence[str],
    models: Sequence[str],
    experiment: str | None,
    forks: ForkView | None = None,
) -> tuple[list[RunPlace], Selection]:
    """The runs named, else those of the models and experiment given (as on /compare),
    placed; and what a table of them counts (``views.places.counted``: ``forks``
    defaults to ``as-rows`` for runs named, ``none`` otherwise)."""
    if runs:
        places = places_of(conn, runs)
        missing = [r for r in runs if r not in places]
        if missing:
            raise RunNotProjected(f"no run {', '.join(map(repr, missing))} here (see /runs)")
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
            f"SELECT run_id FROM runs {clause} ORDER BY model, created_at, run_id LIMIT ?",
            [*args, MAX_RUNS],
        ).fetchall()
        places = places_of(conn, [r[0] for r in rows])
    everyone = list(places.values())
    view: ForkView = forks or ("as-rows" if runs else "none")
    return everyone, counted(everyone, view, by_id=bool(runs))


def table2_live(
    conn: sqlite3.Connection,
    reader: AssessmentReader,
    *,
    runs: Sequence[str] = (),
    models: Sequence[str] = (),
    experiment: str | None,
    forks: ForkView | None = None,
    ratings_query: str,
) -> Table2Live:
    """Table 2 of a selection (as ``select_runs``), by ``places_matrix``: the function
    ``contreact assess matrix`` and the report use."""
    everyone, selection = select_runs(conn, runs, models, experiment, forks)
    view: ForkView = forks or ("as-rows" if runs else "none")
    records, note = reader.records([p.run_id for p in selection.runs])
    count = sum(len(v) for v in records.values())
    if not count:
        return Table2Live(
            runs=len(selection.runs),
            records=0,
            matrix=None,
            ratings_query=ratings_query,
            note=note,
        )
    key = (
        tuple(everyone),
        selection,
        experiment,
        view,
        tuple(sorted(e.event_id for v in records.values() for e in v)),
    )

    def build() -> Any:
        from contreact_analysis.assessments.matrix import places_matrix

        return places_matrix(
            everyone, records, forks=view, experiment=experiment, selection=selection
        )

    return Table2Live(
        runs=len(selection.runs),
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
    forks: ForkView | None = None,
) -> RatingsPage:
    everyone, selection = select_runs(conn, runs, models, experiment, forks)
    records, note = reader.records([p.run_id for p in selection.runs])
    rows = assessment_rows(everyone, selection, records) if any(records.values()) else []
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
    everyone: Sequence[RunPlace], selection: Selection, records: dict[str, list[AssessmentEvent]]
) -> list[AssessmentRow]:
    """The records of the selection's runs as rows, in their table's order, then as
    recorded; evaluators named by the labels of every replica's model (as in the matrix)."""
    from contreact_analysis.assessments.frame import evaluator_labels, rated_runs, ratings_frame
    from contreact_events.config.run_places import ordered

    runs = rated_runs(ordered(selection.runs))
    frame = ratings_frame(
        [r for run in runs for r in records.get(run.run_id, [])],
        runs,
        labels=evaluator_labels(rated_runs(everyone)),
    )
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
    everyone, selection = select_runs(conn, [run_id], (), None)
    records, note = reader.records([run_id])
    if not records.get(run_id):
        return [], note
    return assessment_rows(everyone, selection, records), note
