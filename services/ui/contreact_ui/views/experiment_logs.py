"""What the dashboard computes from an experiment's whole logs, as its stored events:
the logs themselves (``experiment_logs``: what the report is made from) and the
self-report statistics by condition the experiment page shows (``self_reports``), made
by the same code as ``contreact conditions`` and the report
(``contreact_analysis.stats.conditions``, ``report.self_reports``). Those import
pandas, scipy, statsmodels and matplotlib (1.7 of the dashboard's 2.9 CPU-s at start):
they are imported by the first page that needs them, not when the dashboard starts."""

from __future__ import annotations

import sqlite3

from contreact_events.catalog import Event
from contreact_events.wire.codec import event_from_json
from contreact_ui.exceptions import RunNotProjected
from contreact_ui.models.research import SelfReportChart, SelfReports


def experiment_logs(
    conn: sqlite3.Connection, experiment: str, run_ids: list[str] | None = None
) -> dict[str, list[Event]]:
    """Every projected run of ``experiment`` (or those of ``run_ids``) with its stored
    events, in log order."""
    if run_ids is None:
        run_ids = [
            r[0]
            for r in conn.execute(
                "SELECT run_id FROM runs WHERE experiment = ? ORDER BY run_id", (experiment,)
            )
        ]
    if not run_ids:
        raise RunNotProjected(f"no run of experiment {experiment!r} here (see /runs)")
    logs: dict[str, list[Event]] = {}
    for run_id in run_ids:
        rows = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        logs[run_id] = [event_from_json(bytes(r[0]), where=f"run {run_id}") for r in rows]
    return logs


_MEMO: dict[tuple[str, str], tuple[tuple[tuple[str, int], ...], SelfReports | None]] = {}
MEMO_EXPERIMENTS = 32
"""Experiments whose statistics are kept (each until one of its runs' logs grows): a
live page is made again at every change of any run, and the statistics fold every
log of the experiment."""


def self_reports(
    conn: sqlite3.Connection, experiment: str, run_ids: list[str]
) -> SelfReports | None:
    """The self-reports of ``run_ids`` (an experiment's current replicas) by condition;
    None when none of them carries an accepted self-report. Made again only when one of
    those logs has grown since."""
    marks = ",".join("?" * len(run_ids))
    key = tuple(
        (str(run), int(seq))
        for run, seq in conn.execute(
            f"SELECT run_id, MAX(seq) FROM events WHERE run_id IN ({marks}) "
            "GROUP BY run_id ORDER BY run_id",
            run_ids,
        )
    )
    where = (str(conn.execute("PRAGMA database_list").fetchone()[2]), experiment)
    known = _MEMO.get(where)
    if known is not None and known[0] == key:
        return known[1]
    made = _self_reports(conn, experiment, run_ids)
    _MEMO.pop(where, None)
    if len(_MEMO) >= MEMO_EXPERIMENTS:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[where] = (key, made)
    return made


def _self_reports(
    conn: sqlite3.Connection, experiment: str, run_ids: list[str]
) -> SelfReports | None:
    from contreact_analysis.frames import build_frames
    from contreact_analysis.report.self_reports import per_call_charts
    from contreact_analysis.stats.conditions import condition_summary

    reports = build_frames(experiment_logs(conn, experiment, run_ids)).self_reports
    if not len(reports) or not reports["valid"].any():
        return None
    summary = condition_summary(reports)
    charts = [SelfReportChart(model=m, svg=svg) for m, svg in per_call_charts(reports)]
    return SelfReports(**summary, charts=charts)
