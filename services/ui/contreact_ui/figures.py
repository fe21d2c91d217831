"""Summaries of a sample of runs for the tables (Table 1's mean, SD, range and n),
computed by scipy, never by hand-rolled formulas."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    sd: float | None
    """Sample standard deviation (n - 1); None below two values."""
    low: float | None
    high: float | None


def summarize(values: Sequence[float], digits: int = 3) -> Summary:
    if not values:
        return Summary(n=0, mean=None, sd=None, low=None, high=None)
    if len(values) == 1:
        only = round(float(values[0]), digits)
        return Summary(n=1, mean=only, sd=None, low=only, high=only)
    found = stats.describe(list(values), ddof=1)
    sd = math.sqrt(float(found.variance))
    return Summary(
        n=int(found.nobs),
        mean=round(float(found.mean), digits),
        sd=round(sd, digits),
        low=round(float(found.minmax[0]), digits),
        high=round(float(found.minmax[1]), digits),
    )
