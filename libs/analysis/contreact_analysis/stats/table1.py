"""Table 1 across replicas: per model (the experiment's label) and metric, the mean,
standard deviation, number of runs and the t interval of the mean
(``intervals.mean_intervals``: none below three runs or without spread, and then the
reason), with the paper's figure beside where the label is one of the paper's models."""

from __future__ import annotations

import numpy as np
import pandas as pd

from contreact_analysis.intervals import mean_intervals
from contreact_events.protocol.table1 import TABLE1, PaperTable1, paper_table1

COLUMNS = [
    "group",
    "metric",
    "label",
    "n",
    "mean",
    "sd",
    "low",
    "high",
    "method",
    "no_interval",
    "paper",
]
"""``low``/``high``: the interval (NaN where none); ``method``: the interval's;
``no_interval``: why there is none (missing where there is one)."""


def finished(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that completed every cycle: what Table 1 averages over."""
    return runs[runs["status"] == "completed"]


def paper_value(reference: PaperTable1, metric: str, group: str) -> float | None:
    for column in reference.columns:
        if column.lower() == group.lower():
            return reference.value(metric, column)
    return None


def table1(runs: pd.DataFrame, *, by: str = "label", confidence: float = 0.95) -> pd.DataFrame:
    """One row per (group, metric): mean, SD (n - 1 in the denominator), n, and the
    interval of the mean over the group's runs (``runs``: the runs table, already
    filtered as wanted, e.g. ``finished(runs)``)."""
    reference = paper_table1()
    cells = []
    for group, members in runs.groupby(by, sort=True, dropna=False):
        matrix = np.asarray(members[[m.metric for m in TABLE1]], dtype=np.float64).T
        cells += [
            (str(group), metric, values) for metric, values in zip(TABLE1, matrix, strict=True)
        ]
    intervals = mean_intervals([v for *_, v in cells], confidence=confidence, unit="runs")
    rows = [
        {
            "group": name,
            "metric": metric.metric,
            "label": metric.label,
            "n": len(values),
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
            "low": interval.low,
            "high": interval.high,
            "method": interval.method,
            "no_interval": interval.reason,
            "paper": paper_value(reference, metric.metric, name),
        }
        for (name, metric, values), interval in zip(cells, intervals, strict=True)
    ]
    out = pd.DataFrame(rows, columns=COLUMNS)
    text = {"group", "metric", "label", "method", "no_interval"}
    return out.astype({**dict.fromkeys(text, "string"), "n": "int64"})
