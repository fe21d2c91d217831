"""The intervals the platform prints cover what they claim: checked by simulation, the
judge STYLE.md names for intervals over two or three replicas.

Normal data with a known mean (4.3, SD 1.5: a PEI-like spread) is drawn in samples of
n = 2, 3, 5 and 10; a method's coverage is the share of its 95% intervals that hold the
true mean. The t interval the platform uses (``intervals.mean_intervals``) must come
within 2 points of 95% at every n; the bootstrap intervals it used before cover far
less (about the sample's range at n = 2 and 3) and are kept here as the measured reason
why. Then the same check through the tables themselves: Table 1 (``stats.table1``) over
three replicas per model and Table 2's cells (``assessments.pei``) over three histories.

How many replications: a coverage estimated from R independent intervals has binomial
standard error sqrt(0.95 x 0.05 / R). At R = 40,000 that is 0.11 points, so the 2-point
tolerance is 18 standard errors: a method that truly covers 95% cannot fail by chance,
and one 1 point off still passes by a wide margin while one off by 2.5 points fails.
The tables' checks pool 8,000 (Table 1: 1,000 models x 8 metrics) and 3,000 (Table
2's cells) intervals: 0.24 and 0.40 points, 8 and 5 standard errors (the tables' own
code is slower per interval than the one scipy call above). The bootstrap's 4,000
replications (each costs 999 resamples) give 0.7 points at its 75-90% coverage, 4 or
more standard errors from the 93% it would need to come near. Every draw is seeded: the
figures are the same on every run; ``python -m tests.unit.test_interval_coverage``
prints them (docs/architecture.md quotes them). ``... --alpha`` also measures the
bootstrap interval of Krippendorff's alpha (minutes: not a test), which covers less than
its nominal 95% over few histories and is printed as nominal.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from scipy import stats

from contreact_analysis.assessments.agreement import interval_alpha
from contreact_analysis.assessments.columns import ratings_from_rows
from contreact_analysis.assessments.pei import pei_matrix
from contreact_analysis.intervals import mean_intervals
from contreact_analysis.stats.table1 import table1
from contreact_events.protocol.table1 import TABLE1

SEED = 20251128
TRUE_MEAN = 4.3
SD = 1.5
NOMINAL = 0.95
TOLERANCE = 0.02
SIZES = (2, 3, 5, 10)
REPLICATIONS = 40_000
BOOTSTRAP_REPLICATIONS = 4_000
BOOTSTRAP_RESAMPLES = 999
TABLE1_MODELS = 1_000
TABLE2_MODELS = 3_000


def normal_samples(n: int, count: int, seed: int = SEED) -> NDArray[np.float64]:
    return np.random.default_rng([seed, n]).normal(TRUE_MEAN, SD, size=(count, n))


def coverage(lows: Any, highs: Any, truth: float = TRUE_MEAN) -> float:
    """The share of intervals holding ``truth``; an interval not given counts as a miss."""
    low, high = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    return float(np.mean((low <= truth) & (truth <= high)))


def t_coverage(n: int) -> float:
    found = mean_intervals(normal_samples(n, REPLICATIONS), min_n=2)
    return coverage([i.low for i in found], [i.high for i in found])


def bootstrap_coverage(n: int, method: str) -> float:
    samples = normal_samples(n, BOOTSTRAP_REPLICATIONS)
    result = stats.bootstrap(
        (samples,),
        np.mean,
        axis=-1,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method=method,
        vectorized=True,
        rng=np.random.default_rng(SEED),
    )
    return coverage(result.confidence_interval.low, result.confidence_interval.high)


@pytest.mark.parametrize("n", SIZES)
def test_the_t_interval_covers_95_percent(n: int) -> None:
    measured = t_coverage(n)
    assert abs(measured - NOMINAL) <= TOLERANCE, f"n = {n}: t interval covers {measured:.2%}"


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize("n", SIZES)
def test_the_bootstrap_of_a_few_values_covers_far_less(n: int, method: str) -> None:
    """Why the means' intervals are not bootstrap intervals (``bootstrap_interval``
    stays for Krippendorff's alpha, whose distribution has no closed form)."""
    measured = bootstrap_coverage(n, method)
    assert measured < NOMINAL - TOLERANCE, f"n = {n}: {method} covers {measured:.2%}"


def table1_coverage(replicas: int = 3) -> tuple[float, pd.DataFrame]:
    rng = np.random.default_rng([SEED, 1])
    metrics = [m.metric for m in TABLE1]
    runs = pd.DataFrame(
        rng.normal(TRUE_MEAN, SD, size=(TABLE1_MODELS * replicas, len(metrics))),
        columns=metrics,
    ).assign(label=[f"m{k:05d}" for k in range(TABLE1_MODELS) for _ in range(replicas)])
    table = table1(runs)
    return coverage(table["low"], table["high"]), table


def test_table1_intervals_over_three_replicas_cover_95_percent() -> None:
    measured, table = table1_coverage()
    assert (table["n"] == 3).all() and (table["method"] == "t").all()
    assert abs(measured - NOMINAL) <= TOLERANCE, f"Table 1 covers {measured:.2%}"


def table2_coverage(histories: int = 3, models: int = TABLE2_MODELS) -> tuple[float, list[Any]]:
    rng = np.random.default_rng([SEED, 2])
    values = rng.normal(TRUE_MEAN, SD, size=(models, histories))
    rows = [
        {
            "run_id": f"exp-m{model:05d}-{letter}",
            "history_model": f"m{model:05d}",
            "replica": letter,
            "evaluator": "judge",
            "evaluator_model": "m/judge",
            "instrument": "pei",
            "value": float(values[model, k]),
        }
        for model in range(models)
        for k, letter in enumerate("ABCDEFGHIJ"[:histories])
    ]
    cells = pei_matrix(ratings_from_rows(rows), resamples=0).cells
    intervals = [c.interval for c in cells]
    lows = [i.low if i and i.low is not None else np.nan for i in intervals]
    highs = [i.high if i and i.high is not None else np.nan for i in intervals]
    return coverage(lows, highs), cells


def test_table2_cell_intervals_over_three_histories_cover_95_percent() -> None:
    measured, cells = table2_coverage()
    assert all(c.histories == 3 and c.interval and c.interval.method == "t" for c in cells)
    assert abs(measured - NOMINAL) <= TOLERANCE, f"Table 2's cells cover {measured:.2%}"


def test_two_histories_give_no_interval_and_say_why() -> None:
    _, cells = table2_coverage(histories=2, models=100)
    assert {(c.interval.low, c.interval.high, c.interval.reason) for c in cells if c.interval} == {
        (None, None, "n = 2: too few histories for an interval")
    }


def alpha_coverage(units: int, raters: int, replications: int) -> float:
    """Targets and rater noise of equal variance: the population's interval alpha is
    var(target) / (var(target) + var(noise)) = 0.5."""
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(replications):
        ratings = rng.normal(0, 1, size=(units, 1)) + rng.normal(0, 1, size=(units, raters))
        found = interval_alpha(pd.DataFrame(ratings), resamples=999)
        hits += found.low is not None and found.high is not None and found.low <= 0.5 <= found.high
    return hits / replications


def main() -> None:  # the figures docs/architecture.md quotes
    print("n   t       percentile  BCa")
    for n in SIZES:
        t = t_coverage(n)
        percentile, bca = (bootstrap_coverage(n, m) for m in ("percentile", "BCa"))
        print(f"{n:<3} {t:.2%}  {percentile:.2%}      {bca:.2%}")
    print(f"Table 1 over 3 replicas: {table1_coverage()[0]:.2%}")
    print(f"Table 2's cells over 3 histories: {table2_coverage()[0]:.2%}")
    if "--alpha" in sys.argv:
        print(f"alpha's BCa, 6 histories x 5 evaluators: {alpha_coverage(6, 5, 200):.1%}")
        print(f"alpha's BCa, 18 histories x 6 evaluators: {alpha_coverage(18, 6, 150):.1%}")


if __name__ == "__main__":
    main()
