"""The resampling statistics (``contreact_analysis.intervals``, scipy underneath) against
examples computed by hand or published.

* Paired permutation test: Darwin's Zea mays data as analysed by R. A. Fisher, *The Design
  of Experiments* (1935), section 21: of the 2^15 = 32,768 ways to give the 15 differences
  signs, 1,726 give a sum at least as large in absolute value as the observed 314, so the
  two-sided p-value is 1726/32768 = 0.05267 (Fisher: "5.267 per cent").
* Small cases enumerated by hand (the sign flips of three differences, the 20 ways to
  split six values in two groups of three, the 27 bootstrap resamples of three values).
* The t interval of a mean: Student's (1908) sleep data as R's
  ``t.test(extra ~ group, data = sleep, paired = TRUE)`` reports it, and three values by
  hand. Its coverage is checked by simulation in ``test_interval_coverage.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from contreact_analysis.exceptions import NotEnoughData
from contreact_analysis.intervals import (
    MIN_INTERVAL_N,
    T_METHOD,
    bootstrap_interval,
    mean_interval,
    mean_intervals,
    paired_permutation_tests,
    permutation_test,
)

DARWIN_DIFFERENCES = [49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48]
"""Cross- minus self-fertilised plant heights, in eighths of an inch (Fisher 1935, Table 3)."""
SLEEP_DIFFERENCES = [1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4]
"""Extra hours of sleep, drug 2 minus drug 1, ten patients (Student 1908, the data of
Cushny and Peebles; R's ``sleep``). R: mean 1.58, t = 4.0621, df = 9, 95 percent
confidence interval 0.7001142 to 2.4598858."""


def test_fishers_randomisation_test_of_darwins_data() -> None:
    differences = np.asarray(DARWIN_DIFFERENCES, dtype=np.float64)
    result = permutation_test(
        differences, np.zeros_like(differences), paired=True, resamples=40_000
    )
    assert result.exact and result.resamples == 2**15
    assert result.difference == pytest.approx(314 / 15)
    assert result.p_value == pytest.approx(1726 / 32768, abs=1e-12)


def test_paired_sign_flips_by_hand() -> None:
    # Differences 1, 2, 3: the 8 sign patterns give sums 6, 4, 2, 0, 0, -2, -4, -6;
    # two of them (6 and -6) are as extreme as the observed 6: p = 2/8.
    result = permutation_test([2.0, 4.0, 6.0], [1.0, 2.0, 3.0], paired=True)
    assert result.exact and result.n == 3
    assert result.difference == pytest.approx(2.0)
    assert result.p_value == pytest.approx(0.25)
    greater = permutation_test([2.0, 4.0, 6.0], [1.0, 2.0, 3.0], paired=True, alternative="greater")
    assert greater.p_value == pytest.approx(1 / 8)


def test_independent_relabelling_by_hand() -> None:
    # 1, 2, 3 against 4, 5, 6: of the C(6, 3) = 20 splits, only this one and its mirror
    # give a difference of means as large as |-3|: p = 2/20.
    result = permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], paired=False)
    assert result.exact and result.resamples == math.comb(6, 3)
    assert result.difference == pytest.approx(-3.0)
    assert result.p_value == pytest.approx(0.1)


def test_percentile_bootstrap_by_hand() -> None:
    # The 27 equally likely resamples of (1, 2, 4) have means from 1 (all ones, 1/27 =
    # 3.7 %) to 4 (all fours, 3.7 %): more than 2.5 % of the mass sits on each extreme,
    # so the 95 % percentile interval is exactly [1, 4].
    interval = bootstrap_interval([1.0, 2.0, 4.0], method="percentile")
    assert interval.estimate == pytest.approx(7 / 3)
    assert (interval.low, interval.high) == (1.0, 4.0)
    assert interval.n == 3 and interval.defined
    # Two values 0 and 1: resample means 0, 0.5, 1 with weights 1/4, 1/2, 1/4.
    two = bootstrap_interval([0.0, 1.0], method="percentile")
    assert (two.low, two.high) == (0.0, 1.0)
    # 50 %: the middle half of the resample means is all 0.5.
    half = bootstrap_interval([0.0, 1.0], method="percentile", confidence=0.4)
    assert (half.low, half.high) == (0.5, 0.5)


def test_bootstrap_is_seeded_and_handles_degenerate_samples() -> None:
    values = [3.1, 4.7, 2.2, 8.9, 5.5, 6.0]
    assert bootstrap_interval(values) == bootstrap_interval(values)
    one = bootstrap_interval([5.0])
    assert one.estimate == 5.0 and not one.defined
    same = bootstrap_interval([2.0, 2.0, 2.0])
    assert (same.low, same.estimate, same.high) == (2.0, 2.0, 2.0)
    with pytest.raises(NotEnoughData):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_interval([1.0, math.nan])
    with pytest.raises(ValueError, match="as long as each other"):
        permutation_test([1.0, 2.0], [1.0], paired=True)


def test_t_interval_of_students_sleep_data() -> None:
    interval = mean_interval(SLEEP_DIFFERENCES)
    assert interval.estimate == pytest.approx(1.58)
    assert interval.low == pytest.approx(0.7001142, abs=1e-7)
    assert interval.high == pytest.approx(2.4598858, abs=1e-7)
    assert interval.method == T_METHOD and interval.reason is None and interval.n == 10


def test_t_interval_by_hand() -> None:
    # 1, 2, 3: mean 2, SD 1, standard error 1/sqrt(3); t(0.975, 2 df) = 4.302653:
    # 2 -+ 2.484138.
    interval = mean_interval([1.0, 2.0, 3.0])
    assert interval.low == pytest.approx(2 - 4.302653 / math.sqrt(3))
    assert interval.high == pytest.approx(2 + 4.302653 / math.sqrt(3))


def test_no_interval_says_why() -> None:
    assert MIN_INTERVAL_N == 3
    two = mean_interval([4.0, 6.0], unit="histories")
    assert two.estimate == 5.0 and not two.defined
    assert two.reason == "n = 2: too few histories for an interval"
    one = mean_interval([4.0], unit="runs")
    assert one.reason == "n = 1: too few runs for an interval" and not one.defined
    same = mean_interval([3.0, 3.0, 3.0], unit="histories")
    assert same.estimate == 3.0 and not same.defined
    assert same.reason == "n = 3: every value is 3, no spread to estimate an interval"
    # asked for, n = 2 gets its (very wide: 12.7 standard errors) t interval
    wide = mean_intervals([[4.0, 6.0]], min_n=2)[0]
    assert wide.low == pytest.approx(5 - 12.7062) and wide.high == pytest.approx(5 + 12.7062)
    with pytest.raises(NotEnoughData):
        mean_interval([])
    with pytest.raises(ValueError, match="NaN"):
        mean_interval([1.0, math.nan, 2.0])
    with pytest.raises(ValueError, match="min_n=1"):
        mean_intervals([[1.0, 2.0]], min_n=1)


def test_many_intervals_at_once_are_each_rows_single_interval() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(12, 4))
    rows[3] = 2.5  # a constant row: no interval, and why
    together = mean_intervals(rows)
    alone = [mean_interval(row) for row in rows]
    assert together == alone
    assert not together[3].defined and together[3].reason is not None
    assert all(i.defined for k, i in enumerate(together) if k != 3)
    single = mean_intervals([[4.0], [5.0]])
    assert [i.estimate for i in single] == [4.0, 5.0] and not single[0].defined


def test_many_paired_tests_at_once_are_each_rows_single_test() -> None:
    rng = np.random.default_rng(8)
    first, second = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    together = paired_permutation_tests(first, second)
    alone = [permutation_test(a, b, paired=True) for a, b in zip(first, second, strict=True)]
    assert together == alone
    darwin = paired_permutation_tests(
        [DARWIN_DIFFERENCES], [[0.0] * len(DARWIN_DIFFERENCES)], resamples=40_000
    )
    assert darwin[0].p_value == pytest.approx(1726 / 32768, abs=1e-12)
    with pytest.raises(ValueError, match="must be alike"):
        paired_permutation_tests([[1.0, 2.0]], [[1.0]])
