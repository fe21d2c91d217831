"""The report's self-report section: per model and condition the mean score with its
interval, each condition against the baseline (``stats.conditions``), and the scores'
trajectory per cycle, one line per model and condition."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

import numpy as np
import pandas as pd

from contreact_analysis.intervals import mean_intervals
from contreact_analysis.report.charts import trajectory_chart
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
