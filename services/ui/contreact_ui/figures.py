"""Summaries of a sample of runs for the tables (Table 1's mean, SD, interval and n),
computed by numpy and scipy, never by hand-rolled formulas."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    sd: float | None
    """Sample standard deviation (n - 1); None below two values."""
    low: float | None
    high: float | None
    """The 95% t interval of the mean (``contreact_analysis.intervals.mean_interval``,
    the report's); None where there is none, and ``no_interval`` says why."""
    no_interval: str | None = None


def summarize(values: Sequence[float], digits: int = 3) -> Summary:
    if not values:
        return Summary(n=0, mean=None, sd=None, low=None, high=None)
    from contreact_analysis.intervals import mean_interval  # scipy: loaded when first used

    sample = np.asarray(values, dtype=np.float64)
    interval = mean_interval(sample, unit="runs")
    return Summary(
        n=int(sample.size),
        mean=round(float(np.mean(sample)), digits),
        sd=round(float(np.std(sample, ddof=1)), digits) if sample.size > 1 else None,
        low=round(interval.low, digits) if interval.defined else None,
        high=round(interval.high, digits) if interval.defined else None,
        no_interval=interval.reason,
    )
