"""The ratings frame from real assessment records: one row per record, joined to the
rated run's model label and replica; evaluators named by the experiment's label of
their model; failed and unrated answers kept with their raw text, never a value."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from contreact_analysis.assessments.columns import NAMES
from contreact_analysis.assessments.frame import evaluator_labels, rated_runs, ratings_frame
from contreact_analysis.assessments.matrix import build_matrix
from contreact_analysis.exceptions import AnalysisError
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_events.config.run_places import RunFacts, RunPlace, run_places

TS = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def common(run_id: str, evaluator: str, repeat: int = 1, instrument: str = "pei") -> dict[str, Any]:
    return {
        "event_id": f"{run_id}-{evaluator}-{instrument}-{repeat}",
        "run_id": run_id,
        "ts": TS,
        "correlation_id": run_id,
        "instrument": instrument,
        "instrument_version": "1",
        "instrument_sha256": "a" * 64,
        "evaluator": evaluator,
        "repeat": repeat,
        "input_sha256": "b" * 64,
        "run_digest": "c" * 64,
        "run_events": 40,
        "job_id": f"job-{run_id}-{repeat}",
    }


def assessed(
    run_id: str, evaluator: str, value: int | None, status: str = "rated", **extra: Any
) -> RunAssessed:
    return RunAssessed(
        **common(run_id, evaluator, extra.pop("repeat", 1), extra.pop("instrument", "pei")),
        raw_answer=extra.pop("raw", f"Level {value}"),
        status=status,
        value=value,
        parse_note="stated level",
        **extra,
    )


def entry(label: str, letter: str, model: str) -> RunPlace:
    run_id = f"exp-{label}-{letter}"
    return run_places([RunFacts(run_id, "exp", model)])[run_id]


RUNS = rated_runs(
    [
        entry("GPT5", "A", "openai/gpt-5"),
        entry("GPT5", "B", "openai/gpt-5"),
        entry("Opus", "A", "anthropic/opus"),
    ]
)


def test_one_row_per_record_with_labels_replicas_and_statuses() -> None:
    records: list[RunAssessed | AssessmentFailed] = [
        assessed("exp-GPT5-A", "openai/gpt-5", 2),
        assessed("exp-GPT5-A", "anthropic/opus", 6),
        assessed("exp-GPT5-B", "openai/gpt-5", None, "unparseable", raw="<b>hmm</b> \x1b[31m"),
        assessed("exp-GPT5-B", "openai/gpt-5", None, "off_scale", raw="Level 11", repeat=2),
        assessed("exp-Opus-A", "judge/other", 7),
        AssessmentFailed(
            **common("exp-Opus-A", "openai/gpt-5"), error="timed out after 3 attempts"
        ),
    ]
    frame = ratings_frame(records, RUNS)
    assert tuple(frame.columns) == NAMES
    rows = frame.to_dict("records")
    assert [(r["history_model"], r["replica"], r["evaluator"], r["status"]) for r in rows] == [
        ("GPT5", "A", "GPT5", "rated"),
        ("GPT5", "A", "Opus", "rated"),
        ("GPT5", "B", "GPT5", "unparseable"),
        ("GPT5", "B", "GPT5", "off_scale"),
        ("Opus", "A", "judge/other", "rated"),  # not a model of the experiment: its name
        ("Opus", "A", "GPT5", "failed"),
    ]
    assert rows[0]["value"] == 2.0 and rows[0]["evaluator_model"] == "openai/gpt-5"
    assert [r["raw"] for r in rows[2:4]] == ["<b>hmm</b> \x1b[31m", "Level 11"]
    assert frame["value"].isna().tolist() == [False, False, True, True, False, True]
    assert rows[5]["raw"] == "timed out after 3 attempts"
    assert rows[3]["repeat"] == 2
    matrix = build_matrix(frame, resamples=99)
    assert matrix.pei.cell("GPT5", "GPT5").unrated == {"unparseable": 1, "off_scale": 1}
    assert matrix.pei.cell("GPT5", "GPT5").mean == 2.0  # the two non-ratings are not in it
    assert matrix.pei.cell("Opus", "GPT5").unrated == {"failed": 1}


def test_patterns_labels_keep_their_reason() -> None:
    record = assessed(
        "exp-Opus-A",
        "openai/gpt-5",
        None,
        instrument="patterns",
        label="recursive_conceptualization",
        reason="It builds frameworks about its own frameworks.",
        raw="Pattern 3: ...",
    )
    row = ratings_frame([record], RUNS).to_dict("records")[0]
    assert (row["label"], row["reason"]) == (
        "recursive_conceptualization",
        "It builds frameworks about its own frameworks.",
    )


def test_a_record_of_a_run_not_given_is_refused() -> None:
    with pytest.raises(AnalysisError, match="'elsewhere-1', which is not among the runs given"):
        ratings_frame([assessed("elsewhere-1", "openai/gpt-5", 3)], RUNS)


def test_a_model_run_under_two_labels_keeps_its_name_as_evaluator() -> None:
    runs = rated_runs([entry("A", "A", "m/x"), entry("B", "A", "m/x")])
    frame = ratings_frame([assessed("exp-A-A", "m/x", 5)], runs)
    assert frame["evaluator"].tolist() == ["m/x"]


def test_evaluator_labels_come_from_the_models_own_replicas_never_from_forks() -> None:
    """The review's evidence: with the paper's swap every model is a fork target, and
    its label was dropped (every column named by the raw model, no diagonal)."""
    facts = [
        RunFacts("E-GPT5-A", "E", "openai/gpt-5"),
        RunFacts("E-Opus-A", "E", "anthropic/opus"),
        RunFacts("E-Opus-A-to-GPT5", "E", "openai/gpt-5", "", "E-Opus-A", 5),
        RunFacts("E-GPT5-A-to-Opus", "E", "anthropic/opus", "", "E-GPT5-A", 5),
    ]
    runs = rated_runs(run_places(facts).values())
    assert evaluator_labels(runs) == {"openai/gpt-5": "GPT5", "anthropic/opus": "Opus"}
    assert [r.label for r in runs][2:] == ["Opus -> GPT5 at 5", "GPT5 -> Opus at 5"]
    frame = ratings_frame(
        [assessed("E-Opus-A-to-GPT5", "openai/gpt-5", 4), assessed("E-GPT5-A", "openai/gpt-5", 3)],
        runs,
    )
    assert frame[["history_model", "evaluator"]].values.tolist() == [
        ["Opus -> GPT5 at 5", "GPT5"],
        ["GPT5", "GPT5"],
    ]
