"""Agreement between evaluators, each through the maintained library that defines it:

- Krippendorff's alpha, interval level (``krippendorff.alpha``): every history any two
  evaluators rated counts, missing ratings allowed;
- ICC(2,1) and ICC(3,1) of Shrout & Fleiss (1979) (``pingouin.intraclass_corr``): two-way
  random and two-way mixed, single rater, absolute agreement and consistency; only the
  histories every evaluator rated (the models need a complete table);
- the mean pairwise Spearman correlation between evaluators (``scipy.stats.spearmanr``)
  over the histories both rated; a pair where one rated every history alike has no
  correlation and is left out (and counted);
- Fleiss' kappa of labels (``statsmodels.stats.inter_rater.fleiss_kappa``), subjects rated
  by every evaluator.

Each takes a table with one row per unit (history) and one column per rater
(evaluator), NaN (None for labels) where a rater gave no rating, and returns a small
result: the estimate (None when it is not defined) with the n it rests on.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contreact_analysis.assessments.results import (
    AlphaResult,
    ICCResult,
    KappaResult,
    SpearmanResult,
)
from contreact_analysis.intervals import bootstrap_interval

__all__ = ["fleiss_kappa_of", "icc", "interval_alpha", "mean_pairwise_spearman"]

ALPHA_RESAMPLES = 999
"""Each resample computes alpha afresh (about 0.5 ms at 18 x 6): fewer than for a mean
(9,999), so a 6 x 6 matrix stays near a second."""


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _alpha(values: NDArray[np.float64]) -> float:
    """Interval alpha of units x raters, NaN where it is not defined (nothing pairable,
    or one value used by all: 0/0)."""
    import krippendorff  # (the statistics libraries load when first used)

    pairable = np.sum(~np.isnan(values), axis=1) >= 2
    if not pairable.any() or np.unique(values[pairable][~np.isnan(values[pairable])]).size < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=values.T, level_of_measurement="interval"))


def interval_alpha(table: pd.DataFrame, *, resamples: int = ALPHA_RESAMPLES) -> AlphaResult:
    """Krippendorff's interval alpha of ``table`` (units x raters, NaN for missing), with
    a bootstrap interval over the units (``resamples`` 0: none). Krippendorff (2004,
    section 11.4) bootstraps alpha's distribution the same way, over units."""
    values = table.to_numpy(dtype=float)
    pairable = int((np.sum(~np.isnan(values), axis=1) >= 2).sum()) if values.size else 0
    raters = int(table.shape[1])
    alpha = _finite(_alpha(values)) if values.size else None
    if alpha is None:
        return AlphaResult(alpha=None, units=pairable, raters=raters)
    low = high = None
    if resamples and len(values) >= 3:

        def statistic(index: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
            rows = np.asarray(index, dtype=int)
            if rows.ndim == 1:
                return np.asarray(_alpha(values[rows]))
            return np.array([_alpha(values[r]) for r in rows])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a resample without spread: its alpha is NaN
            found = bootstrap_interval(
                np.arange(len(values), dtype=float), statistic=statistic, resamples=resamples
            )
        if found.defined and alpha is not None:
            low, high = _finite(found.low), _finite(found.high)
    return AlphaResult(
        alpha=alpha,
        units=pairable,
        raters=raters,
        low=low,
        high=high,
        resamples=resamples if low is not None else 0,
    )


def icc(table: pd.DataFrame, kind: str) -> ICCResult:
    """ICC(2,1) (``kind="ICC2"``) or ICC(3,1) (``kind="ICC3"``) of ``table``."""
    names = {"ICC2": "ICC(2,1)", "ICC3": "ICC(3,1)"}
    rows = {"ICC2": ("ICC(A,1)", "ICC2"), "ICC3": ("ICC(C,1)", "ICC3")}
    """pingouin 0.7 names them by McGraw & Wong (A: absolute agreement, C: consistency);
    earlier versions by Shrout & Fleiss."""
    complete = table.dropna(axis=0, how="any")
    raters = int(table.shape[1])
    empty = ICCResult(
        icc=None, low=None, high=None, targets=len(complete), raters=raters, kind=names[kind]
    )
    if raters < 2 or len(complete) < 2 or complete.to_numpy().std() == 0:
        return empty
    long = (
        complete.rename_axis("target")
        .reset_index()
        .melt(id_vars="target", var_name="rater", value_name="rating")
    )
    import pingouin  # (it loads matplotlib: seconds, paid when first used)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pingouin on pandas 3: inplace deprecations; 0/0
        result = pingouin.intraclass_corr(
            data=long, targets="target", raters="rater", ratings="rating"
        )
    table_rows = result.set_index("Type")
    row = table_rows.loc[next(name for name in rows[kind] if name in table_rows.index)]
    low, high = (float(v) for v in row["CI95" if "CI95" in row.index else "CI95%"])
    return ICCResult(
        icc=_finite(float(row["ICC"])),
        low=_finite(low),
        high=_finite(high),
        targets=len(complete),
        raters=raters,
        kind=names[kind],
    )


def mean_pairwise_spearman(table: pd.DataFrame) -> SpearmanResult:
    """The mean of Spearman's rho over every pair of raters (columns)."""
    from scipy import stats

    rho: dict[str, float] = {}
    undefined: list[tuple[str, str]] = []
    for first, second in itertools.combinations([str(c) for c in table.columns], 2):
        both = table[[first, second]].dropna()
        a, b = both[first].to_numpy(), both[second].to_numpy()
        if len(both) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
            undefined.append((first, second))
            continue
        value = _finite(float(stats.spearmanr(a, b).statistic))
        if value is None:
            undefined.append((first, second))
        else:
            rho[f"{first}|{second}"] = value
    mean = float(np.mean(list(rho.values()))) if rho else None
    return SpearmanResult(mean=mean, pairs=len(rho), undefined_pairs=undefined, rho=rho)


def fleiss_kappa_of(table: pd.DataFrame, categories: Sequence[str]) -> KappaResult:
    """Fleiss' kappa of labels (subjects x raters, None where a rater gave no label)."""
    complete = table.dropna(axis=0, how="any")
    raters = int(table.shape[1])
    empty = KappaResult(
        kappa=None, subjects=len(complete), raters=raters, categories=list(categories)
    )
    if raters < 2 or complete.empty:
        return empty
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    index = {label: i for i, label in enumerate(categories)}
    unknown = set(complete.to_numpy().ravel()) - set(index)
    if unknown:
        raise ValueError(
            f"fleiss_kappa_of: labels {sorted(map(str, unknown))} not in {list(categories)}"
        )
    codes = complete.apply(lambda column: column.map(index)).to_numpy(dtype=int)
    counts, _ = aggregate_raters(codes, n_cat=len(categories))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every label the same: 0/0
        kappa = fleiss_kappa(counts, method="fleiss")
    return KappaResult(
        kappa=_finite(float(kappa)),
        subjects=len(complete),
        raters=raters,
        categories=list(categories),
    )
