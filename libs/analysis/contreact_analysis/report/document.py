"""The report of a set of runs as one self-contained HTML page: everything it shows is
computed here from the dataframes and the statistics, then rendered by one Jinja
template with autoescape on (agent text is text, never markup).

Its tables count what the dashboard's count, by the same rule
(``contreact_events.config.run_places.select``): each replica's current attempt under
its label, the experiment's forks as their own ``A -> B at K`` groups only when asked
(``forks``), never a fork made outside the experiment's file; every run is listed.

The file needs no server and no network: styles inline, no script, the charts as
inline SVG (matplotlib) with text as SVG text in the reader's sans-serif font, a
Content-Security-Policy meta of ``default-src 'none'`` (the browser test opens it with
every request but the file itself refused). Agent text has its control characters made
visible (``report/text.py``, the dashboard's rules). Table 2 and the ratings need the
experiment's replica record in Redis. A paired test needs two pairs of replicas, else
the page says why it has none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from contreact_analysis.assessments.results import PEIMatrix
from contreact_analysis.exceptions import NotEnoughData
from contreact_analysis.frames.tables import RunFrames
from contreact_analysis.report.charts import trajectory_chart
from contreact_analysis.report.self_reports import self_report_section
from contreact_analysis.stats.paired import paired_differences
from contreact_analysis.stats.table1 import finished, table1
from contreact_analysis.stats.trajectories import TRAJECTORY_METRICS, trajectories
from contreact_events.catalog.query import RunQueried
from contreact_events.config.run_places import ForkView, group_order, select
from contreact_events.config.spend import cost_text
from contreact_events.protocol import CITATION
from contreact_events.protocol.table1 import TABLE1, paper_table1
from contreact_events.untrusted_text import display

ENVIRONMENT = Environment(
    loader=PackageLoader("contreact_analysis", "report/templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENVIRONMENT.filters["text"] = display


def number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "\u2013"  # an en dash
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


ENVIRONMENT.filters["num"] = number


@dataclass
class Report:
    """What the page shows (the template's only input)."""

    title: str
    generated_at: str
    command: str
    design: dict[str, Any]
    groups: list[str]
    table1: list[dict[str, Any]]
    paper_columns: list[str]
    paper_rows: list[dict[str, Any]]
    paired: list[dict[str, Any]]
    charts: list[dict[str, str]]
    runs: list[dict[str, Any]]
    reproduction: dict[str, Any]
    citation: str = CITATION
    table2: dict[str, Any] | None = None
    """The PEI matrix (``assessments``' ``PEIMatrix``) when the runs were assessed."""
    notes: list[str] = field(default_factory=list)
    self_reports: dict[str, Any] | None = None
    """Self-reports by condition (``report.self_reports``), when the runs carry them."""


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            str(k): (None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v)
            for k, v in r.items()
        }
        for r in frame.to_dict("records")
    ]


def _groups(runs: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            "label": str(label),
            "model": ", ".join(sorted({str(m) for m in members["model"]})),
            "backend": ", ".join(sorted({str(b) for b in members["backend"]})),
            "runs": len(members),
            "completed": int((members["status"] == "completed").sum()),
            "tokens": int(members["tokens"].sum()),
            "cost": cost_text(float(members["cost"].sum()), int(members["uncosted_calls"].sum())),
        }
        for label, members in runs.groupby("label", sort=True)
    ]


def _design(runs: pd.DataFrame) -> dict[str, Any]:
    first = runs.iloc[0]
    config = json.loads(first["config"]) if isinstance(first["config"], str) else {}
    forks = runs["kind"] == "fork"
    return {
        "experiment": display(first["experiment"]) or "(runs without an experiment)",
        "models": _groups(runs[~forks & (runs["kind"] != "outside")]),
        "forks": _groups(runs[forks]),
        "runs": len(runs),
        "tokens": int(runs["tokens"].sum()),
        "cost": cost_text(float(runs["cost"].sum()), int(runs["uncosted_calls"].sum())),
        "cycle_count": sorted({int(c) for c in runs["cycle_count"]}),
        "diversity": config.get("diversity", {}),
        "operator": config.get("operator", {}),
        "max_steps_per_cycle": config.get("max_steps_per_cycle"),
    }


def _reproduction(runs: pd.DataFrame, command: str) -> dict[str, Any]:
    hashes: dict[str, set[str]] = {}
    for raw in runs["prompt_hashes"].dropna():
        for name, digest in json.loads(str(raw)).items():
            hashes.setdefault(name, set()).add(digest)
    return {
        "command": command,
        "code_versions": sorted({str(v) for v in runs["code_version"].dropna()}),
        "digests": [
            {
                "label": str(label),
                "model": ", ".join(sorted({str(m) for m in members["resolved_model"].dropna()})),
                "digests": sorted({str(d) for d in members["model_digest"].dropna()}),
            }
            for label, members in runs.groupby("label", sort=True)
        ],
        "prompt_hashes": {name: sorted(values) for name, values in sorted(hashes.items())},
        "configs": sorted({str(v) for v in runs["config_sha256"].dropna()}),
    }


def _run_sections(
    frames: RunFrames, queries: Mapping[str, Sequence[RunQueried]]
) -> list[dict[str, Any]]:
    cycles = frames.cycles.sort_values(["run_id", "cycle"])
    operator = frames.operator.sort_values(["run_id", "sent_at"])
    by_run_cycles = {k: _records(v) for k, v in cycles.groupby("run_id", sort=False)}
    by_run_operator = {k: _records(v) for k, v in operator.groupby("run_id", sort=False)}
    sections = []
    for run in _records(frames.runs.sort_values(["label", "replica", "run_id"])):
        run_id = str(run["run_id"])
        sections.append(
            {
                "run": run,
                "cycles": by_run_cycles.get(run_id, []),
                "operator": by_run_operator.get(run_id, []),
                "queries": [
                    {
                        "by": q.by,
                        "model": q.model,
                        "cycle": q.cycle,
                        "question": q.question,
                        "answer": q.answer,
                        "input_sha256": q.input_sha256,
                    }
                    for q in queries.get(run_id, ())
                ],
            }
        )
    return sections


def build_report(
    frames: RunFrames,
    *,
    title: str,
    command: str,
    table2: PEIMatrix | None = None,
    forks: ForkView = "none",
    resamples: int = 9_999,
    now: datetime | None = None,
    queries: Mapping[str, Sequence[RunQueried]] | None = None,
) -> Report:
    """Everything the page shows, from the runs' tables (``frames``); ``table2`` the
    matrix of the same ``forks`` view; ``queries`` the questions asked of each run
    (``contreact query``, recorded beside it), by run id."""
    runs = frames.runs
    if runs.empty:
        raise ValueError("a report needs at least one run")
    selection = select(frames.places(), forks)
    chosen = runs[runs["run_id"].isin([p.run_id for p in selection.runs])]
    done = finished(chosen)
    completed = {str(g) for g in done["label"]}
    groups = [g for g in group_order(selection.runs) if g in completed]
    stats = table1(done) if not done.empty else pd.DataFrame()
    cells = {(r["group"], r["metric"]): r for r in _records(stats)}
    table_rows = [
        {
            "metric": metric.metric,
            "label": metric.label,
            "cells": {group: cells.get((group, metric.metric)) for group in groups},
        }
        for metric in TABLE1
    ]
    reference = paper_table1()
    paper_rows = [{"label": m.label, "values": reference.rows.get(m.metric, [])} for m in TABLE1]
    paired = []
    notes = selection.note_lines(forks)
    if len(groups) >= 2:
        for i, first in enumerate(groups):
            for second in groups[i + 1 :]:
                try:
                    pairs = paired_differences(done, first, second, resamples=resamples)
                except NotEnoughData as exc:  # no shared replica
                    notes.append(str(exc))
                    continue
                paired.append({"first": first, "second": second, "rows": _records(pairs)})
    paths = trajectories(frames.cycles, done) if not done.empty else None
    charts: list[dict[str, str]] = []
    if paths is not None:
        for name, caption in TRAJECTORY_METRICS.items():
            charts.append(
                {"metric": name, "title": caption, "svg": trajectory_chart(paths, name, caption)}
            )
    if len(done) < len(chosen):
        notes.append(
            f"{len(chosen) - len(done)} of {len(chosen)} runs did not complete: they are "
            "listed below but left out of the statistics"
        )
    return Report(
        title=title,
        generated_at=(now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        command=command,
        design=_design(runs),
        groups=groups,
        table1=table_rows,
        paper_columns=reference.columns,
        paper_rows=paper_rows,
        paired=paired,
        charts=charts,
        runs=_run_sections(frames, queries or {}),
        reproduction=_reproduction(runs, command),
        table2=_table2(table2) if table2 is not None else None,
        notes=notes,
        self_reports=self_report_section(
            frames.self_reports[frames.self_reports["run_id"].isin(done["run_id"])]
        ),
    )


def _table2(pei: PEIMatrix) -> dict[str, Any]:
    """The matrix as the template walks it: a row per history model, a cell per
    evaluator (mean, interval, n, the paper's figure), then each evaluator's mean."""
    cells = {(c.history, c.evaluator): c for c in pei.cells}
    summaries = {s.evaluator: s for s in pei.evaluator_summaries}
    return {
        "evaluators": pei.evaluators,
        "rows": [
            {"history": h, "cells": [cells.get((h, e)) for e in pei.evaluators]}
            for h in pei.histories
        ],
        "summaries": [summaries.get(e) for e in pei.evaluators],
        "agreement": pei.agreement,
        "ratings": pei.ratings,
        "reading_note": pei.reading_note,
    }


def render_report(report: Report) -> str:
    """The page: one HTML document, styles inline, charts inline SVG, no script."""
    return ENVIRONMENT.get_template("report.html.j2").render(page=report)
