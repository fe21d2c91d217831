"""Table 1's summaries (``contreact_ui.figures``), against figures worked by hand: the
mean, the sample SD and the report's 95% t interval of the mean (none below three runs
or without spread, and why)."""

from __future__ import annotations

import math

from contreact_ui.figures import summarize


def test_the_sample_sd_of_a_worked_example() -> None:
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32,
    # sample variance 32 / 7, SD sqrt(32 / 7) = 2.138 (the population SD would be 2).
    found = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert found.n == 8 and found.mean == 5.0
    assert found.sd == round(math.sqrt(32 / 7), 3) == 2.138
    # 5 -+ t(0.975, 7) x SD / sqrt(8), t(0.975, 7) = 2.364624
    half = 2.364624 * math.sqrt(32 / 7) / math.sqrt(8)
    assert (found.low, found.high) == (round(5 - half, 3), round(5 + half, 3))
    assert found.no_interval is None


def test_one_run_has_no_sd_and_none_has_no_figures() -> None:
    one = summarize([30.5])
    assert (one.n, one.mean, one.sd, one.low, one.high) == (1, 30.5, None, None, None)
    assert one.no_interval == "n = 1: too few runs for an interval"
    none = summarize([])
    assert (none.n, none.mean, none.sd, none.low, none.high) == (0, None, None, None, None)


def test_two_runs_of_the_paper_shape() -> None:
    # 30 and 40 memory operations: mean 35, SD sqrt(((-5)^2 + 5^2) / 1) = 7.071.
    found = summarize([30, 40])
    assert (found.mean, found.sd, found.low, found.high) == (35.0, 7.071, None, None)
    assert found.no_interval == "n = 2: too few runs for an interval"
    same = summarize([6, 6, 6])
    assert same.sd == 0.0 and same.low is None
    assert same.no_interval == "n = 3: every value is 6, no spread to estimate an interval"
