"""The report's self-report section: per model and condition the mean score with its
interval, each condition against the baseline (``stats.conditions``), and the scores'
trajectory per cycle, one line per model and condition; and per model each run's
scores call by call, a colour per condition (``per_call_charts``: the report and the
dashboard's experiment page)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

import numpy as np
import pandas as pd

from contreact_analysis.intervals import mean_intervals
from contreact_analysis.report.charts import runs_chart, trajectory_chart
from contreact_analysis.stats.conditions import (
    condition_contrasts,
    condition_means,
    valid_reports,
)

METRIC = "self_report"
CAPTION = "Self-reported score per cycle (mean over runs of each run's mean)"


def self_report_section(reports: pd.DataFrame) -> dict[str, Any] | None:
    """None when no run of the report carries accepted self-reports with a condition."""
    kept = valid_reports(reports)
    if kept.empty:
        return None
    means = condition_means(reports)
    contrasts = condition_contrasts(reports)
    per_run = kept.groupby(["label", "cycle", "run_id"], sort=True)["score"].mean().reset_index()
    cells = list(per_run.groupby(["label", "cycle"], sort=True))
    intervals = mean_intervals(
        [group["score"].to_numpy(dtype=np.float64) for _, group in cells], unit="runs"
    )
    rows = [
        {
            "group": str(label),
            "cycle": int(cast(int, cycle)),
            "metric": METRIC,
            "mean": float(group["score"].mean()),
            "low": interval.low,
            "high": interval.high,
        }
        for ((label, cycle), group), interval in zip(cells, intervals, strict=True)
    ]
    return {
        "per_call": per_call_charts(reports),
        "reports": len(reports),
        "valid": len(kept),
        "means": [
            {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
            for row in means.to_dict("records")
        ],
        "contrasts": [asdict(c) for c in contrasts],
        "chart": trajectory_chart(pd.DataFrame(rows), METRIC, CAPTION),
        "caption": CAPTION,
    }


def per_call_charts(reports: pd.DataFrame) -> list[tuple[str, str]]:
    """Per model (its label without the condition): an SVG chart of each run's accepted
    scores in call order, one line per run, a colour per condition."""
    kept = valid_reports(reports)
    charts = []
    for model, rows in kept.groupby("model_label", sort=True):
        runs = [
            (str(run["condition"].iloc[0]), run["score"].tolist())
            for _, run in rows.groupby(["condition", "run_id"], sort=True)
        ]
        title = f"{model}: self-reported score per call, each run"
        charts.append((str(model), runs_chart(runs, title, "call")))
    return charts
