"""Intervals and tests over small samples (replicas, histories), through scipy.

One place for the resampling statistics the platform reports, so Table 1 across replicas
and the assessment matrix across histories compute their intervals the same way. Every
function is seeded: the same data gives the same interval on every machine.

- ``bootstrap_interval``: ``scipy.stats.bootstrap`` (BCa by default, percentile on
  request) of a statistic of one sample.
- ``bootstrap_intervals`` and ``paired_permutation_tests``: the same, for many samples
  of one size at once (one scipy call over the rows of a matrix; each row's result is
  the one the single-sample function gives it with the same seed, which a test
  checks). A report's Table 1 and trajectories need hundreds of intervals.
- ``permutation_test``: ``scipy.stats.permutation_test`` of the difference of means,
  paired (the signs of the paired differences are flipped) or independent (the labels
  are shuffled). With few observations scipy enumerates every permutation, so the
  p-value is exact and can be checked by hand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from contreact_analysis.exceptions import NotEnoughData

__all__ = [
    "DEFAULT_RESAMPLES",
    "Interval",
    "PermutationResult",
    "bootstrap_interval",
    "bootstrap_intervals",
    "paired_permutation_tests",
    "permutation_test",
]

DEFAULT_RESAMPLES = 9_999
DEFAULT_SEED = 20250925
"""Fixed, so an interval printed in a report is reproduced by anyone who reruns it."""

Statistic = Callable[..., NDArray[np.float64] | float]
Alternative = Literal["two-sided", "less", "greater"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval. With one observation, or when every
    observation is equal, the bounds equal the estimate's degenerate interval: ``low`` and
    ``high`` are NaN for n = 1 (no spread can be estimated) and equal the value for a
    constant sample of n > 1."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    method: str

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
        return Interval(estimate, math.nan, math.nan, 1, confidence, method)
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


def bootstrap_intervals(
    rows: Sequence[Sequence[float]] | NDArray[np.float64],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    method: Literal["percentile", "basic"] = "percentile",
    seed: int = DEFAULT_SEED,
) -> list[Interval]:
    """``bootstrap_interval`` of the mean of each row (samples of one size), in one
    scipy call. BCa is left out: a constant row makes its acceleration undefined."""
    matrix = _rows(rows, "bootstrap_intervals")
    count, size = matrix.shape
    if size == 0:
        raise NotEnoughData("bootstrap_intervals: no observations (give at least one)")
    estimates = matrix.mean(axis=-1)
    if size == 1 or count == 0:
        return [Interval(float(e), math.nan, math.nan, size, confidence, method) for e in estimates]
    result = stats.bootstrap(
        (matrix,),
        np.mean,
        axis=-1,
        confidence_level=confidence,
        n_resamples=resamples,
        method=method,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    lows = np.atleast_1d(result.confidence_interval.low)
    highs = np.atleast_1d(result.confidence_interval.high)
    constant = np.all(matrix == matrix[:, :1], axis=-1)
    return [
        Interval(
            float(e),
            float(e) if same else float(low),
            float(e) if same else float(high),
            size,
            confidence,
            method,
        )
        for e, low, high, same in zip(estimates, lows, highs, constant, strict=True)
    ]


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
