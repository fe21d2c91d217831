"""Each agreement statistic of the assessment matrix, through its library, against a
published worked example (cited at each test) or a hand computation shown in full."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from contreact_analysis.assessments.agreement import (
    fleiss_kappa_of,
    icc,
    interval_alpha,
    mean_pairwise_spearman,
)

NA = math.nan


def test_krippendorff_interval_alpha_of_his_worked_example() -> None:
    """K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section C,
    "Interval data, multiple observers, missing values": 4 observers, 12 units; the
    paper reports alpha = 0.849 at the interval level."""
    observers = {
        "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
        "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
        "C": [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
        "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
    }
    table = pd.DataFrame(observers)  # units x observers
    result = interval_alpha(table)
    assert result.alpha == pytest.approx(0.849, abs=5e-4)
    assert result.units == 11  # unit 12 has one value: not pairable
    assert result.raters == 4


def test_alpha_has_a_bootstrap_interval_over_units() -> None:
    """Resampling the units (Krippendorff 2004, 11.4): seeded, so the same data give the
    same interval; it holds the estimate. Without resamples, no interval."""
    table = pd.DataFrame(
        {
            "A": [1, 2, 3, 3, 2, 1, 4, 1, 2],
            "B": [1, 2, 3, 3, 2, 2, 4, 1, 2],
            "C": [2, 3, 3, 3, 2, 3, 4, 2, 2],
        },
        dtype=float,
    )
    first, again = interval_alpha(table), interval_alpha(table)
    assert first == again and first.resamples > 0
    assert first.low is not None and first.high is not None
    assert first.low < (first.alpha or 0) <= first.high <= 1
    assert interval_alpha(table, resamples=0).low is None


def test_alpha_is_undefined_without_pairable_units_or_variation() -> None:
    assert interval_alpha(pd.DataFrame({"A": [1.0, NA], "B": [NA, 2.0]})).alpha is None
    assert interval_alpha(pd.DataFrame({"A": [3.0, 3.0], "B": [3.0, 3.0]})).alpha is None


SHROUT_FLEISS = pd.DataFrame(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    columns=["judge1", "judge2", "judge3", "judge4"],
    dtype=float,
)
"""P. E. Shrout and J. L. Fleiss, "Intraclass correlations: uses in assessing rater
reliability", Psychological Bulletin 86(2), 1979, Table 2: 6 targets, 4 judges."""


def test_icc_of_shrout_and_fleiss_table_2() -> None:
    """Shrout & Fleiss (1979), Table 4 (the ICCs of the Table 2 data): ICC(2,1) = .29,
    ICC(3,1) = .71."""
    two = icc(SHROUT_FLEISS, "ICC2")
    three = icc(SHROUT_FLEISS, "ICC3")
    assert round(two.icc or 0, 2) == 0.29
    assert round(three.icc or 0, 2) == 0.71
    assert (two.kind, three.kind) == ("ICC(2,1)", "ICC(3,1)")
    assert two.targets == 6 and two.raters == 4
    assert two.low is not None and two.high is not None and two.low < 0.29 < two.high


def test_icc_uses_only_targets_every_rater_rated() -> None:
    table = SHROUT_FLEISS.copy()
    table.loc[len(table)] = [NA, 3.0, 3.0, 3.0]
    assert icc(table, "ICC2").targets == 6
    assert round(icc(table, "ICC2").icc or 0, 2) == 0.29


def test_mean_pairwise_spearman_by_hand() -> None:
    """Ranks need no averaging (no ties); rho = 1 - 6 sum(d^2) / (n (n^2 - 1)), n = 5:
    A,B: d = (-1, 1, -1, 1, 0), sum d^2 = 4, rho = 1 - 24/120 = 0.8;
    A,C: C reverses A, rho = -1;
    B,C: d = (2-5, 1-4, 4-3, 3-2, 5-1) = (-3, -3, 1, 1, 4), sum d^2 = 36, rho = -0.8;
    mean = (0.8 - 1 - 0.8) / 3 = -1/3. D rates every unit alike: no correlation."""
    table = pd.DataFrame(
        {
            "A": [1, 2, 3, 4, 5],
            "B": [2, 1, 4, 3, 5],
            "C": [5, 4, 3, 2, 1],
            "D": [7, 7, 7, 7, 7],
        },
        dtype=float,
    )
    result = mean_pairwise_spearman(table)
    assert result.rho == pytest.approx({"A|B": 0.8, "A|C": -1.0, "B|C": -0.8})
    assert result.mean == pytest.approx(-1 / 3)
    assert result.pairs == 3
    assert result.undefined_pairs == [("A", "D"), ("B", "D"), ("C", "D")]


def test_spearman_with_ties_uses_mid_ranks() -> None:
    """x = (1, 2, 2, 3) ranks (1, 2.5, 2.5, 4); y = (1, 3, 2, 4) ranks (1, 3, 2, 4).
    Pearson of the ranks: deviations x' = (-1.5, 0, 0, 1.5), y' = (-1.5, .5, -.5, 1.5);
    sum x'y' = 4.5, sum x'^2 = 4.5, sum y'^2 = 5; rho = 4.5 / sqrt(4.5 * 5) = 0.9487."""
    table = pd.DataFrame({"x": [1, 2, 2, 3], "y": [1, 3, 2, 4]}, dtype=float)
    assert mean_pairwise_spearman(table).mean == pytest.approx(4.5 / math.sqrt(22.5))


FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ]
)
"""J. L. Fleiss, "Measuring nominal scale agreement among many raters", Psychological
Bulletin 76(5), 1971, Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses
(1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other), as the
raters' diagnoses (the layout of R's irr::diagnoses)."""


def test_fleiss_kappa_of_fleiss_1971() -> None:
    """Fleiss (1971) reports kappa = 0.430 for these data (R's irr::kappam.fleiss: 0.4302)."""
    names = ["depression", "personality", "schizophrenia", "neurosis", "other"]
    table = pd.DataFrame(FLEISS_1971).apply(lambda c: c.map(lambda v: names[v - 1]))
    result = fleiss_kappa_of(table, names)
    assert result.kappa == pytest.approx(0.4302, abs=5e-5)
    assert (result.subjects, result.raters) == (30, 6)


def test_fleiss_kappa_by_hand_and_incomplete_subjects_left_out() -> None:
    """3 subjects, 2 raters, 2 categories; subject 4 lacks a label and is left out.
    Agreement per subject P_i = (sum n_ij^2 - n) / (n (n - 1)): (1, 1, 0) -> P = 2/3;
    category shares p = (3/6, 3/6) -> P_e = 0.5; kappa = (2/3 - .5) / (1 - .5) = 1/3."""
    table = pd.DataFrame(
        {"E1": ["x", "y", "x", "x"], "E2": ["x", "y", "y", None]}, index=["r1", "r2", "r3", "r4"]
    )
    result = fleiss_kappa_of(table, ["x", "y"])
    assert result.kappa == pytest.approx(1 / 3)
    assert result.subjects == 3


def test_fleiss_kappa_refuses_a_label_outside_the_categories() -> None:
    table = pd.DataFrame({"E1": ["x"], "E2": ["z"]})
    with pytest.raises(ValueError, match="not in"):
        fleiss_kappa_of(table, ["x", "y"])
