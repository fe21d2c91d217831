"""The ratings frame: one row per assessment record (``RunAssessed`` or
``AssessmentFailed``), joined to the rated run's group (its model label, or a fork's
``A -> B at K``) and replica.

An evaluator is named by the label of the experiment's model it is (the evaluator
``openai/gpt-5`` of an experiment that runs it as ``GPT5`` is ``GPT5``), so a model
rating its own histories lands on the diagonal. The labels come from the models' own
replicas, never from forks (a fork runs another model's label's model on a mixed
history); an evaluator that ran no replica keeps its model name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from contreact_analysis.assessments.columns import RATED, ratings_from_rows
from contreact_analysis.exceptions import AnalysisError
from contreact_bus.assessments.readings import in_force
from contreact_events.catalog.assessment import AssessmentEvent, AssessmentFailed, RunAssessed
from contreact_events.config.run_places import RunPlace

__all__ = ["RatedRun", "evaluator_labels", "rated_runs", "ratings_frame"]


@dataclass(frozen=True)
class RatedRun:
    """A rated run (a history): its group (Table 2's row), replica and model."""

    run_id: str
    label: str
    replica: str
    model: str
    fork: bool = False
    """A fork's history: its model names no evaluator (``evaluator_labels``)."""


def rated_runs(places: Iterable[RunPlace]) -> list[RatedRun]:
    """The rated runs of runs placed in their experiment (``config.run_places``)."""
    return [RatedRun(p.run_id, p.group, p.letter, p.model, p.is_fork) for p in places]


def evaluator_labels(runs: Iterable[RatedRun]) -> dict[str, str]:
    """Model name -> label, from the runs that are no forks, for the models that ran
    under one label only."""
    labels: dict[str, set[str]] = {}
    for run in runs:
        if not run.fork:
            labels.setdefault(run.model, set()).add(run.label)
    return {model: next(iter(names)) for model, names in labels.items() if len(names) == 1}


def ratings_frame(
    records: Iterable[AssessmentEvent],
    runs: Iterable[RatedRun] | Mapping[str, RatedRun],
    *,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per rating in force (columns in ``columns.COLUMNS``). ``records``: the
    assessment records of the rated runs, in the order recorded; a rating asked again
    after a transient failure replaces it, and a person's latest reading of a rating
    is its value (``contreact_bus.assessments.in_force``). A record of a run not in
    ``runs`` is refused: its row and column are unknown.
    ``labels``: the evaluators' labels (default: ``evaluator_labels(runs)``)."""
    by_id = dict(runs) if isinstance(runs, Mapping) else {r.run_id: r for r in runs}
    labels = evaluator_labels(by_id.values()) if labels is None else labels
    rows = []
    for record in in_force(records):
        run = by_id.get(record.run_id)
        if run is None:
            raise AnalysisError(
                f"an assessment of run {record.run_id!r}, which is not among the runs given "
                "(pass every rated run with its model label and replica)"
            )
        rows.append(_row(record, run, labels))
    return ratings_from_rows(rows)


def _row(
    record: RunAssessed | AssessmentFailed, run: RatedRun, labels: Mapping[str, str]
) -> dict[str, Any]:
    evaluator = record.evaluator
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "history_model": run.label,
        "replica": run.replica,
        "evaluator": labels.get(evaluator, evaluator),
        "evaluator_model": evaluator,
        "instrument": record.instrument,
        "repeat": record.repeat,
        "event_id": record.event_id,
        "ts": record.ts,
    }
    if isinstance(record, AssessmentFailed):
        return row | {"status": "failed", "raw": record.error}
    rated = record.status == RATED
    return row | {
        "status": record.status,
        "value": float(record.value) if rated and record.value is not None else None,
        "label": record.label if rated else None,
        "reason": record.reason,
        "raw": record.raw_answer,
        "note": record.parse_note,
        "read_by": record.read_by,
        "reader": record.reading.by if record.reading else None,
        "read_at": record.reading.at if record.reading else None,
    }
