"""Per-cycle trajectories: for each model, metric and cycle, the mean over the model's
runs and the t interval of it (``intervals.mean_intervals``: NaN below three runs or
without spread), for tool calls, response length, similarity, memory keys cycle by
cycle."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contreact_analysis.intervals import mean_intervals

TRAJECTORY_METRICS = {
    "tool_calls": "Tool calls",
    "response_chars": "Response characters",
    "max_similarity": "Max similarity to an earlier reflection",
    "memory_keys": "Unique memory keys (the agent's own)",
}
COLUMNS = ["group", "metric", "cycle", "n", "mean", "low", "high"]


def trajectories(
    cycles: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    by: str = "label",
    metrics: tuple[str, ...] = tuple(TRAJECTORY_METRICS),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per (group, metric, cycle) over the ended cycles of ``runs``' runs; a
    cycle without a value (no similarity assessed yet) is left out of its mean."""
    groups = runs.set_index("run_id")[by]
    ended = cycles[cycles["complete"] & cycles["run_id"].isin(groups.index)]
    ended = ended.assign(_group=ended["run_id"].map(groups))
    cells: list[tuple[str, str, int, NDArray[np.float64]]] = []
    for (group, cycle), members in ended.groupby(["_group", "cycle"], sort=True):
        for metric in metrics:
            column = np.asarray(members[metric], dtype=np.float64)
            values: NDArray[np.float64] = np.asarray(column[~np.isnan(column)], dtype=np.float64)
            if values.size:
                cells.append((str(group), metric, int(str(cycle)), values))
    intervals = mean_intervals([v for *_, v in cells], confidence=confidence, unit="runs")
    rows = [
        {
            "group": group,
            "metric": metric,
            "cycle": cycle,
            "n": values.size,
            "mean": float(values.mean()),
            "low": interval.low,
            "high": interval.high,
        }
        for (group, metric, cycle, values), interval in zip(cells, intervals, strict=True)
    ]
    rows.sort(key=lambda r: (r["group"], r["cycle"], metrics.index(r["metric"])))
    return pd.DataFrame(rows, columns=COLUMNS)
