"""Intervals and tests over small samples (replicas, histories), through scipy.

One place for the interval statistics the platform reports, so Table 1 across replicas
and the assessment matrix across histories compute their intervals the same way. Every
function is deterministic (the resampling ones seeded): the same data gives the same
interval on every machine.

- ``mean_interval`` and ``mean_intervals``: the interval of a mean that Table 1, its
  trajectories and Table 2 (cells, evaluator means, self-preference) print: Student's t
  interval (``scipy.stats.ttest_1samp(...).confidence_interval``), one sample or many
  samples of one size in one call. Shown from ``MIN_INTERVAL_N`` values on, and only
  where the values differ; otherwise its bounds are NaN and ``reason`` says why. A
  simulation in the tests holds its coverage of normal data within 2 points of the
  nominal 95% at n = 2, 3, 5 and 10, where the bootstrap's covers 50-90% (the figures
  are in ``docs/architecture.md``): over two or three replicas a bootstrap interval of
  the mean is about the sample's range, not a 95% interval.
- ``bootstrap_interval``: ``scipy.stats.bootstrap`` (BCa by default, percentile on
  request) of any statistic of one sample (Krippendorff's alpha over histories).
- ``paired_permutation_tests``: many paired tests of one size at once (one scipy call
  over the rows of a matrix; each row's result is the one ``permutation_test`` gives it
  with the same seed, which a test checks).
- ``permutation_test``: ``scipy.stats.permutation_test`` of the difference of means,
  paired (the signs of the paired differences are flipped) or independent (the labels
  are shuffled). With few observations scipy enumerates every permutation, so the
  p-value is exact and can be checked by hand.

The coverage figures beyond the table in ``docs/architecture.md``: through the tables'
own code, Table 1 over three replicas covers 95.63% (1,000 models x 8 metrics) and
Table 2's cells over three histories 95.03% (3,000 cells). On PEI-like integer ratings
(a normal rounded to 1-10, measured once, not a test) the t interval is conservative:
98-100% at n = 3, 95-97% at n = 5. Krippendorff's alpha keeps the BCa bootstrap (no
closed form), printed as "BCa bootstrap over histories, nominal 95%" because it covers
less: a one-off simulation (true alpha 0.5, normal targets, rater noise of equal
variance) measured 75.5% over 6 histories x 5 evaluators (200 replications) and 89.3%
over 18 x 6, the paper's design (150 replications;
``python -m tests.unit.test_interval_coverage --alpha`` reproduces both). ICC's
intervals are pingouin's F intervals, printed as such.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from contreact_analysis.exceptions import NotEnoughData

__all__ = [
    "DEFAULT_RESAMPLES",
    "MIN_INTERVAL_N",
    "T_METHOD",
    "Interval",
    "PermutationResult",
    "bootstrap_interval",
    "mean_interval",
    "mean_intervals",
    "paired_permutation_tests",
    "permutation_test",
]

DEFAULT_RESAMPLES = 9_999
DEFAULT_SEED = 20250925
"""Fixed, so an interval printed in a report is reproduced by anyone who reruns it."""

T_METHOD = "t"
"""Student's t interval of the mean (``scipy.stats.ttest_1samp``), n - 1 degrees of
freedom."""
MIN_INTERVAL_N = 3
"""The fewest values a mean's interval is shown for. The t interval covers as it
claims from n = 2 on (the simulation in the tests), but at n = 2 it spans 12.7
standard errors either side of the mean, wider than the PEI scale for any spread:
"too few" says the same more plainly."""

Statistic = Callable[..., NDArray[np.float64] | float]
Alternative = Literal["two-sided", "less", "greater"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval and the method that made it.
    ``low`` and ``high`` are NaN where no interval is given, and ``reason`` then says
    why (one observation, too few, no spread). A bootstrap interval of a constant sample
    of n > 1 is the value itself (``bootstrap_interval``)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    method: str
    reason: str | None = None
    """Why there is no interval (None when there is one)."""

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


@dataclass(frozen=True)
class PermutationResult:
    """The observed difference of means (first minus second) and its p-value."""

    difference: float
    p_value: float
    n: int
    paired: bool
    exact: bool
    resamples: int
    alternative: Alternative


def _sample(values: Sequence[float] | NDArray[np.float64], what: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what}: expected one sample (a flat sequence), got shape {array.shape}")
    if np.isnan(array).any():
        raise ValueError(f"{what}: the sample holds NaN; drop missing values before")
    return array


def bootstrap_interval(
    values: Sequence[float] | NDArray[np.float64],
    *,
    statistic: Statistic = np.mean,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
    seed: int = DEFAULT_SEED,
) -> Interval:
    """The bootstrap interval of ``statistic`` over ``values`` (``statistic`` takes an
    ``axis`` argument, as numpy's reductions do). NotEnoughData for an empty sample."""
    sample = _sample(values, "bootstrap_interval")
    if sample.size == 0:
        raise NotEnoughData("bootstrap_interval: no observations (give at least one)")
    estimate = float(statistic(sample, axis=-1))
    if sample.size == 1:
        reason = "n = 1: one value, no spread to estimate an interval"
        return Interval(estimate, math.nan, math.nan, 1, confidence, method, reason)
    if np.all(sample == sample[0]):
        return Interval(estimate, estimate, estimate, int(sample.size), confidence, method)
    result = stats.bootstrap(
        (sample,),
        statistic,
        confidence_level=confidence,
        n_resamples=resamples,
        method=method,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return Interval(
        estimate, float(interval.low), float(interval.high), int(sample.size), confidence, method
    )


def permutation_test(
    first: Sequence[float] | NDArray[np.float64],
    second: Sequence[float] | NDArray[np.float64],
    *,
    paired: bool,
    alternative: Alternative = "two-sided",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PermutationResult:
    """Whether the means of two samples differ. ``paired``: the i-th observations belong
    together (same replica seed, same history), so the samples must be as long as each
    other. NotEnoughData when a sample is empty."""
    a = _sample(first, "permutation_test (first)")
    b = _sample(second, "permutation_test (second)")
    if a.size == 0 or b.size == 0:
        raise NotEnoughData("permutation_test: each sample needs at least one observation")
    if paired and a.size != b.size:
        raise ValueError(
            f"permutation_test: paired samples must be as long as each other ({a.size} vs {b.size})"
        )

    def mean_difference(
        x: NDArray[np.float64], y: NDArray[np.float64], axis: int = -1
    ) -> NDArray[np.float64]:
        return np.asarray(np.mean(x, axis=axis) - np.mean(y, axis=axis))

    permutations = 2**a.size if paired else math.comb(a.size + b.size, a.size)
    result = stats.permutation_test(
        (a, b),
        mean_difference,
        permutation_type="samples" if paired else "independent",
        vectorized=True,
        n_resamples=resamples,
        alternative=alternative,
        rng=np.random.default_rng(seed),
    )
    return PermutationResult(
        difference=float(result.statistic),
        p_value=float(result.pvalue),
        n=int(a.size) if paired else int(a.size + b.size),
        paired=paired,
        exact=permutations <= resamples,
        resamples=min(resamples, permutations),
        alternative=alternative,
    )


def _rows(
    values: Sequence[Sequence[float]] | NDArray[np.float64], what: str
) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{what}: expected samples as the rows of a matrix, got {array.shape}")
    if np.isnan(array).any():
        raise ValueError(f"{what}: a sample holds NaN; drop missing values before")
    return array


def mean_interval(
    values: Sequence[float] | NDArray[np.float64],
    *,
    confidence: float = 0.95,
    unit: str = "values",
) -> Interval:
    """Student's t interval of the mean of ``values`` (``T_METHOD``), or none with the
    reason: fewer than ``MIN_INTERVAL_N`` values ("n = 2: too few histories for an
    interval", ``unit`` naming what they are), or every value the same (a t interval
    of zero width would claim a certainty three equal ratings do not give).
    NotEnoughData for an empty sample."""
    return mean_intervals([values], confidence=confidence, unit=unit)[0]


def mean_intervals(
    samples: Sequence[Sequence[float] | NDArray[np.float64]] | NDArray[np.float64],
    *,
    confidence: float = 0.95,
    unit: str = "values",
    min_n: int = MIN_INTERVAL_N,
) -> list[Interval]:
    """``mean_interval`` of each sample, in one scipy call per sample size: a report's
    Table 1 and trajectories, and a matrix's cells, need hundreds of intervals (a
    matrix's rows are samples of one size). ``min_n`` (at least 2): the fewest values
    to give an interval for (the coverage simulation asks for n = 2 too)."""
    if min_n < 2:
        raise ValueError(f"mean_intervals: min_n={min_n}; a t interval needs 2 values or more")
    if isinstance(samples, np.ndarray):
        matrix = _rows(samples, "mean_intervals")
        return _same_size(matrix, confidence, unit, min_n)
    arrays = [_sample(values, "mean_intervals") for values in samples]
    by_size: dict[int, list[int]] = {}
    for index, array in enumerate(arrays):
        by_size.setdefault(array.size, []).append(index)
    out: list[Interval | None] = [None] * len(arrays)
    for size, indices in by_size.items():
        if size == 0:
            raise NotEnoughData("mean_intervals: an empty sample (give at least one value)")
        found = _same_size(np.stack([arrays[i] for i in indices]), confidence, unit, min_n)
        for index, interval in zip(indices, found, strict=True):
            out[index] = interval
    return [interval for interval in out if interval is not None]


def _same_size(
    matrix: NDArray[np.float64], confidence: float, unit: str, min_n: int
) -> list[Interval]:
    count, size = matrix.shape
    if size == 0:
        raise NotEnoughData("mean_intervals: no observations (give at least one)")
    estimates = [float(e) for e in matrix.mean(axis=-1)]
    if size < min_n or count == 0:
        reason = f"n = {size}: too few {unit} for an interval"
        return [_none(e, size, confidence, reason) for e in estimates]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a constant row: 0 / 0
        found = stats.ttest_1samp(matrix, 0.0, axis=-1).confidence_interval(confidence)
    lows, highs = np.atleast_1d(found.low).tolist(), np.atleast_1d(found.high).tolist()
    constant = np.all(matrix == matrix[:, :1], axis=-1).tolist()
    out = []
    for estimate, low, high, same, first in zip(
        estimates, lows, highs, constant, matrix[:, 0].tolist(), strict=True
    ):
        if same:
            reason = f"n = {size}: every value is {first:g}, no spread to estimate an interval"
            out.append(_none(estimate, size, confidence, reason))
        else:
            out.append(Interval(estimate, low, high, size, confidence, T_METHOD))
    return out


def _none(estimate: float, n: int, confidence: float, reason: str) -> Interval:
    return Interval(estimate, math.nan, math.nan, n, confidence, T_METHOD, reason)


def paired_permutation_tests(
    first: Sequence[Sequence[float]] | NDArray[np.float64],
    second: Sequence[Sequence[float]] | NDArray[np.float64],
    *,
    alternative: Alternative = "two-sided",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[PermutationResult]:
    """``permutation_test(..., paired=True)`` of each row of ``first`` against the same
    row of ``second`` (one metric per row, the pairs along it), in one scipy call."""
    a = _rows(first, "paired_permutation_tests (first)")
    b = _rows(second, "paired_permutation_tests (second)")
    if a.shape != b.shape:
        raise ValueError(
            f"paired_permutation_tests: the samples must be alike ({a.shape} vs {b.shape})"
        )
    count, size = a.shape
    if size == 0:
        raise NotEnoughData("paired_permutation_tests: each sample needs at least one pair")
    if count == 0:
        return []

    def mean_difference(
        x: NDArray[np.float64], y: NDArray[np.float64], axis: int = -1
    ) -> NDArray[np.float64]:
        return np.asarray(np.mean(x, axis=axis) - np.mean(y, axis=axis))

    result = stats.permutation_test(
        (a, b),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        axis=-1,
        n_resamples=resamples,
        alternative=alternative,
        rng=np.random.default_rng(seed),
    )
    permutations = 2**size
    differences = np.atleast_1d(result.statistic)
    p_values = np.atleast_1d(result.pvalue)
    return [
        PermutationResult(
            difference=float(d),
            p_value=float(p),
            n=size,
            paired=True,
            exact=permutations <= resamples,
            resamples=min(resamples, permutations),
            alternative=alternative,
        )
        for d, p in zip(differences, p_values, strict=True)
    ]
