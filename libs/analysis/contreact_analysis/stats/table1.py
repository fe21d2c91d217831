"""Table 1 across replicas: per model (the experiment's label) and metric, the mean,
standard deviation, number of runs and a bootstrap interval of the mean, with the
paper's figure beside where the label is one of the paper's models."""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
import pandas as pd

from contreact_analysis.intervals import DEFAULT_RESAMPLES, bootstrap_intervals
from contreact_events.protocol.table1 import TABLE1, PaperTable1, paper_table1

INTERVAL_METHOD: Final[Literal["percentile"]] = "percentile"
"""The percentile bootstrap: with the paper's three replicas per model, BCa's
acceleration would be estimated by a jackknife of three values."""
COLUMNS = ["group", "metric", "label", "n", "mean", "sd", "low", "high", "paper"]


def finished(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that completed every cycle: what Table 1 averages over."""
    return runs[runs["status"] == "completed"]


def paper_value(reference: PaperTable1, metric: str, group: str) -> float | None:
    for column in reference.columns:
        if column.lower() == group.lower():
            return reference.value(metric, column)
    return None


def table1(
    runs: pd.DataFrame,
    *,
    by: str = "label",
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """One row per (group, metric): mean, SD (n - 1 in the denominator), n, and the
    bootstrap interval of the mean over the group's runs (``runs``: the runs table,
    already filtered as wanted, e.g. ``finished(runs)``)."""
    reference = paper_table1()
    rows = []
    for group, members in runs.groupby(by, sort=True, dropna=False):
        name = str(group)
        matrix = np.asarray(members[[m.metric for m in TABLE1]], dtype=np.float64).T
        intervals = bootstrap_intervals(
            matrix, confidence=confidence, resamples=resamples, method=INTERVAL_METHOD
        )
        for metric, values, interval in zip(TABLE1, matrix, intervals, strict=True):
            rows.append(
                {
                    "group": name,
                    "metric": metric.metric,
                    "label": metric.label,
                    "n": len(values),
                    "mean": float(values.mean()),
                    "sd": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
                    "low": interval.low,
                    "high": interval.high,
                    "paper": paper_value(reference, metric.metric, name),
                }
            )
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({"group": "string", "metric": "string", "label": "string", "n": "int64"})
