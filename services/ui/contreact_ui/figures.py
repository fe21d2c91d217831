"""Summaries of a sample of runs for the tables (Table 1's mean, SD, range and n),
computed by numpy, never by hand-rolled formulas."""

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


def summarize(values: Sequence[float], digits: int = 3) -> Summary:
    if not values:
        return Summary(n=0, mean=None, sd=None, low=None, high=None)
    sample = np.asarray(values, dtype=np.float64)
    return Summary(
        n=int(sample.size),
        mean=round(float(np.mean(sample)), digits),
        sd=round(float(np.std(sample, ddof=1)), digits) if sample.size > 1 else None,
        low=round(float(np.min(sample)), digits),
        high=round(float(np.max(sample)), digits),
    )
