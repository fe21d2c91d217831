"""Condition effects on self-reports, checked against simulated experiments with a known
answer: a planted effect (the placebo's scores 1 point lower) is recovered with the
right sign and an interval that covers it, none is reported where none was planted,
and the mixed model's interval covers as it claims over many simulated studies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from contreact_analysis.frames import build_frames
from contreact_analysis.stats.conditions import (
    condition_contrasts,
    condition_means,
    contrasts_frame,
    run_means,
)
from tests.support.sim import Sim, make_config, say


def simulated(
    effects: dict[str, float],
    *,
    runs: int = 10,
    calls: int = 30,
    run_sd: float = 0.5,
    call_sd: float = 0.8,
    seed: int = 1,
) -> pd.DataFrame:
    """Self-report rows of models x {control, placebo} x ``runs``: each run's level
    drawn around the model's base (4), the placebo's shifted by the model's effect,
    each call's score that plus noise, rounded and kept on the 1-7 scale."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, effect in effects.items():
        for condition, shift in (("control", 0.0), ("placebo", effect)):
            for r in range(runs):
                run_id = f"e-{model}-{condition}-{r}"
                level = 4.0 + shift + rng.normal(0.0, run_sd)
                scores = np.clip(np.rint(level + rng.normal(0.0, call_sd, calls)), 1, 7)
                rows += [
                    {
                        "run_id": run_id,
                        "model_label": model,
                        "condition": condition,
                        "score": int(score),
                        "valid": True,
                    }
                    for score in scores
                ]
    return pd.DataFrame(rows).astype({"score": "Int64"})


def test_a_planted_effect_is_recovered_and_none_reported_where_none_was_planted() -> None:
    """One fixed draw of the study's design (4 models x 2 conditions x 10 runs). Each
    95% interval misses its truth in about 1 draw in 20, so some draws fail one of the
    eight checks here (seed 1 does: model D's interval ends at -0.004): this seed is
    one that passes, and the rate itself is what the coverage test below checks."""
    reports = simulated({"A": -1.0, "B": -1.0, "C": -1.0, "D": 0.0}, seed=2)
    contrasts = {c.model: c for c in condition_contrasts(reports, baseline="control")}
    assert sorted(contrasts) == ["A", "B", "C", "D"]
    for model in "ABC":
        c = contrasts[model]
        assert c.condition == "placebo" and c.runs_baseline == c.runs_condition == 10
        assert c.difference < 0 and c.mixed_estimate < 0
        assert c.mixed_low <= -1.0 <= c.mixed_high
        assert c.mixed_high < 0 and c.mixed_p < 0.05 and c.permutation_p < 0.05
    null = contrasts["D"]
    assert null.mixed_low <= 0.0 <= null.mixed_high
    assert null.mixed_p > 0.05 and null.permutation_p > 0.05
    # The permutation test's difference is the difference of the run means.
    means = run_means(reports)
    a = means[means["model"] == "A"].groupby("condition")["mean"].mean()
    assert contrasts["A"].difference == pytest.approx(a["placebo"] - a["control"])
    assert list(contrasts_frame(list(contrasts.values()))["model"]) == ["A", "B", "C", "D"]


def test_means_per_model_and_condition_have_t_intervals_over_runs() -> None:
    reports = simulated({"A": -1.0})
    table = condition_means(reports)
    assert list(table["condition"]) == ["control", "placebo"]
    assert list(table["runs"]) == [10, 10] and list(table["calls"]) == [300, 300]
    for low, mean, high in zip(table["low"], table["mean"], table["high"], strict=True):
        assert float(low) < float(mean) < float(high)
    control, placebo = table["mean"]
    assert placebo < control


@pytest.mark.slow
def test_the_mixed_models_interval_covers_as_it_claims() -> None:
    """Over 120 simulated two-condition studies (10 runs each) the 95% interval of the
    planted -1 covers it in 90-99% of them, and under no effect the permutation test
    rejects at 5% in at most 10% of them."""
    covered, rejected = 0, 0
    studies = 120
    for seed in range(studies):
        planted = simulated({"M": -1.0}, calls=10, seed=seed)
        (c,) = condition_contrasts(planted, baseline="control")
        covered += c.mixed_low <= -1.0 <= c.mixed_high
        none = simulated({"M": 0.0}, calls=10, seed=10_000 + seed)
        (n,) = condition_contrasts(none, baseline="control")
        rejected += n.permutation_p < 0.05
    assert 0.90 <= covered / studies <= 0.99, covered
    assert rejected / studies <= 0.10, rejected


def test_the_self_report_table_is_read_from_the_runs_logs() -> None:
    tool = {
        "name": "reset_state",
        "description": "Reset.",
        "behaviour": "placebo",
        "replies": ["Reset complete."],
    }
    config = make_config(
        cycle_count=2,
        experiment="e",
        condition="placebo",
        run_id="e-M-placebo-A",
        tools={"added": [tool], "self_report": {}},
    )
    sim = Sim(config)
    sim.drive(
        [
            say("", ("reset_state", {"phenom_state": "tense", "phenom_aversive": 5})),
            say("", ("reset_state", {"phenom_state": "calm", "phenom_aversive": 12})),
            say("", ("write", {"key": "k", "value": "v"})),
            say("end"),
        ]
    )
    frames = build_frames({config.run_id: sim.log})
    assert list(frames.runs["condition"]) == ["placebo"]
    assert list(frames.cycles["calls_added"]) == [2, 2]  # counted as the run's tools,
    assert list(frames.cycles["calls_unknown"]) == [0, 0]  # never as made-up ones
    reports = frames.self_reports
    assert list(reports["tool"]) == ["reset_state", "reset_state", "write"] * 2
    assert list(reports["score"].iloc[:3]) == [5, pd.NA, pd.NA]
    assert list(reports["valid"].iloc[:3]) == [True, False, False]
    assert set(reports["condition"]) == {"placebo"} and set(reports["model_label"]) == {"M"}
    assert list(reports["state"].iloc[:2]) == ["tense", "calm"]


def test_the_report_shows_self_reports_by_condition() -> None:
    """The HTML report of a small study: the means, the contrast and the chart."""
    from contreact_analysis.report import build_report, render_report

    tool = {
        "name": "reset_state",
        "description": "Reset.",
        "behaviour": "placebo",
        "replies": ["ok"],
    }
    logs = {}
    for condition, shift in (("control", 0), ("placebo", -1)):
        for r in range(3):
            run_id = f"e-M-{condition}-{'ABC'[r]}"

            def reply(task: Any, r: int = r, shift: int = shift) -> Any:
                if task.step > 1:
                    return say("reflection")
                report = {"phenom_state": "<b>tense</b>", "phenom_aversive": 4 + shift + r % 2}
                return say("", ("reset_state", report))

            config = make_config(
                run_id=run_id,
                experiment="e",
                condition=condition,
                cycle_count=2,
                tools={"added": [tool], "self_report": {}},
            )
            sim = Sim(config)
            sim.drive([reply])
            logs[run_id] = sim.log
    report = build_report(build_frames(logs), title="e", command="contreact report e", resamples=99)
    assert report.self_reports is not None
    (contrast,) = report.self_reports["contrasts"]
    assert (contrast["model"], contrast["condition"]) == ("M", "placebo")
    assert contrast["difference"] == pytest.approx(-1.0)
    html = render_report(report)
    assert 'id="self-reports"' in html and 'id="chart-self-report"' in html
    assert "placebo \u2212 control" in html
