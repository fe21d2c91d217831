"""Condition effects on self-reports: per model and condition, the mean score with its
interval; per model, each condition against the baseline, by a permutation test over
runs and by a linear mixed model with a random intercept per run (statsmodels).

The unit of replication is the run: a run's calls are not independent (one history,
one mood), so the means and the permutation test take each run's mean score, and the
mixed model lets each run have its own level (``score ~ condition + (1 | run)``). The
tests check both against simulated experiments with a planted effect and none
(``tests/unit/test_condition_stats.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from contreact_analysis.intervals import DEFAULT_SEED, mean_intervals, permutation_test

MEANS_COLUMNS = ["model", "condition", "runs", "calls", "mean", "low", "high", "no_interval"]
CONTRAST_COLUMNS = [
    "model",
    "baseline",
    "condition",
    "runs_baseline",
    "runs_condition",
    "difference",
    "permutation_p",
    "mixed_estimate",
    "mixed_low",
    "mixed_high",
    "mixed_p",
    "note",
]


@dataclass(frozen=True)
class ConditionContrast:
    """One condition against the baseline, for one model: scores ``condition`` minus
    ``baseline`` (negative: lower in the condition)."""

    model: str
    baseline: str
    condition: str
    runs_baseline: int
    runs_condition: int
    difference: float
    """Mean of the condition's run means minus the baseline's."""
    permutation_p: float
    """Two-sided permutation test of that difference, run labels shuffled."""
    mixed_estimate: float
    mixed_low: float
    mixed_high: float
    """The mixed model's fixed effect of the condition and its 95% Wald interval."""
    mixed_p: float
    note: str = ""
    """What the fit warned about (a random-intercept variance at zero, say), if anything."""


def valid_reports(reports: pd.DataFrame) -> pd.DataFrame:
    """The accepted reports of runs with a condition (what the statistics use)."""
    kept = reports[reports["valid"] & reports["condition"].notna()]
    return kept.astype({"score": "float64"})


def run_means(reports: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its model, condition, calls and mean score."""
    kept = valid_reports(reports)
    grouped = kept.groupby(["model_label", "condition", "run_id"], sort=True, observed=True)
    out = grouped["score"].agg(["mean", "size"]).reset_index()
    return out.rename(columns={"model_label": "model", "size": "calls"})


def condition_means(reports: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per model and condition: runs, calls, the mean of the run means and its t
    interval over runs (none below three runs, ``intervals.mean_intervals``)."""
    means = run_means(reports)
    cells = list(means.groupby(["model", "condition"], sort=True))
    intervals = mean_intervals(
        [group["mean"].to_numpy(dtype=np.float64) for _, group in cells],
        confidence=confidence,
        unit="runs",
    )
    rows = [
        {
            "model": str(model),
            "condition": str(condition),
            "runs": len(group),
            "calls": int(group["calls"].sum()),
            "mean": float(group["mean"].mean()),
            "low": interval.low,
            "high": interval.high,
            "no_interval": interval.reason,
        }
        for ((model, condition), group), interval in zip(cells, intervals, strict=True)
    ]
    return pd.DataFrame(rows, columns=MEANS_COLUMNS)


def condition_contrasts(
    reports: pd.DataFrame, *, baseline: str | None = None, seed: int = DEFAULT_SEED
) -> list[ConditionContrast]:
    """Per model, each condition against ``baseline`` (default: the first condition in
    alphabetical order). A model with fewer than two runs in either is left out."""
    kept = valid_reports(reports)
    means = run_means(reports)
    out = []
    for model, rows in kept.groupby("model_label", sort=True):
        conditions = sorted(rows["condition"].unique())
        base = baseline if baseline is not None else conditions[0]
        for condition in conditions:
            if condition == base:
                continue
            pair = rows[rows["condition"].isin([base, condition])]
            first = means[(means["model"] == model) & (means["condition"] == base)]["mean"]
            second = means[(means["model"] == model) & (means["condition"] == condition)]["mean"]
            if len(first) < 2 or len(second) < 2:
                continue
            test = permutation_test(second.to_numpy(), first.to_numpy(), paired=False, seed=seed)
            estimate, low, high, p, note = _mixed(pair, condition)
            out.append(
                ConditionContrast(
                    model=str(model),
                    baseline=str(base),
                    condition=str(condition),
                    runs_baseline=len(first),
                    runs_condition=len(second),
                    difference=test.difference,
                    permutation_p=test.p_value,
                    mixed_estimate=estimate,
                    mixed_low=low,
                    mixed_high=high,
                    mixed_p=p,
                    note=note,
                )
            )
    return out


def contrasts_frame(contrasts: list[ConditionContrast]) -> pd.DataFrame:
    return pd.DataFrame([asdict(c) for c in contrasts], columns=CONTRAST_COLUMNS)


def _mixed(rows: pd.DataFrame, condition: str) -> tuple[float, float, float, float, str]:
    """``score ~ treated + (1 | run_id)`` by REML; the effect of ``treated``."""
    data = pd.DataFrame(
        {
            "score": rows["score"].to_numpy(dtype=np.float64),
            "treated": (rows["condition"] == condition).to_numpy(dtype=np.float64),
            "run": rows["run_id"].astype(str).to_numpy(),
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = smf.mixedlm("score ~ treated", data, groups=data["run"]).fit(reml=True)
    low, high = fit.conf_int().loc["treated"]
    notes = sorted({str(w.message).splitlines()[0] for w in caught})
    return (
        float(fit.params["treated"]),
        float(low),
        float(high),
        float(fit.pvalues["treated"]),
        "; ".join(notes),
    )


def condition_summary(reports: pd.DataFrame, *, baseline: str | None = None) -> dict[str, Any]:
    """What ``contreact conditions --json`` prints (and a page would show): the means
    per model and condition, and the contrasts, as plain data."""
    means = condition_means(reports)
    contrasts = condition_contrasts(reports, baseline=baseline)
    return {
        "reports": len(reports),
        "valid_reports": int(reports["valid"].sum()) if len(reports) else 0,
        "means": [_plain(row) for row in means.to_dict(orient="records")],
        "contrasts": [_plain(asdict(c)) for c in contrasts],
    }


def _plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    """NaN and NA as None, numpy numbers as Python's: JSON as the CLI prints it."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            out[str(key)] = None
        elif isinstance(value, np.generic):
            out[str(key)] = value.item()
        else:
            out[str(key)] = value
    return out
