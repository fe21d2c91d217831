"""Two models compared metric by metric: the paired difference of their runs (replica A
with replica A, ...: the replicas of an experiment share their seeds) and a permutation
test of it (``intervals.paired_permutation_tests``, exact for up to 13 pairs)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from contreact_analysis.exceptions import NotEnoughData
from contreact_analysis.intervals import DEFAULT_RESAMPLES, paired_permutation_tests
from contreact_events.protocol.table1 import TABLE1

COLUMNS = [
    "first",
    "second",
    "metric",
    "label",
    "n",
    "mean_first",
    "mean_second",
    "difference",
    "p_value",
    "exact",
]


def paired_differences(
    runs: pd.DataFrame,
    first: str,
    second: str,
    *,
    by: str = "label",
    pair_on: str = "replica",
    resamples: int = DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """One row per Table 1 metric: ``first`` minus ``second`` over the replicas both
    have. NotEnoughData when they share no replica."""
    a = runs[runs[by] == first].set_index(pair_on)
    b = runs[runs[by] == second].set_index(pair_on)
    shared = sorted(set(a.index.dropna()) & set(b.index.dropna()))
    if len(shared) < 2:
        raise NotEnoughData(
            f"{first} and {second} share {len(shared) or 'no'} {pair_on}: a paired test needs "
            "two or more pairs of runs of the same experiment replica (A with A, ...)"
        )
    for side, name in ((a, first), (b, second)):
        twice = sorted({str(r) for r in side.index[side.index.duplicated()].dropna()})
        if twice:
            raise NotEnoughData(
                f"{name} has more than one run of {pair_on} {', '.join(twice)}: keep one "
                "(e.g. only the completed runs) before pairing"
            )
    columns = [metric.metric for metric in TABLE1]
    xs = np.asarray(a.loc[shared, columns], dtype=np.float64)
    ys = np.asarray(b.loc[shared, columns], dtype=np.float64)
    results = paired_permutation_tests(xs.T, ys.T, resamples=resamples)
    rows = []
    for i, (metric, result) in enumerate(zip(TABLE1, results, strict=True)):
        rows.append(
            {
                "first": first,
                "second": second,
                "metric": metric.metric,
                "label": metric.label,
                "n": len(shared),
                "mean_first": float(xs[:, i].mean()),
                "mean_second": float(ys[:, i].mean()),
                "difference": result.difference,
                "p_value": result.p_value,
                "exact": result.exact,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
