"""An experiment's assessments in one object: the PEI matrix and the patterns grid,
built from a ratings frame. The CLI's ``contreact assess matrix EXP [--json]``, the
dashboard's Table 2 and the report answer with the same object, made by the one
function ``places_matrix`` from the runs placed in their experiment and their records
(``matrix_json`` is its JSON)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from contreact_analysis.assessments.agreement import ALPHA_RESAMPLES
from contreact_analysis.assessments.columns import RATED
from contreact_analysis.assessments.frame import evaluator_labels, rated_runs, ratings_frame
from contreact_analysis.assessments.patterns import patterns_grid
from contreact_analysis.assessments.pei import pei_matrix
from contreact_analysis.assessments.results import AssessmentMatrix, PEIMatrix
from contreact_events.catalog.assessment import AssessmentEvent
from contreact_events.config.run_places import (
    ForkView,
    RunPlace,
    Selection,
    group_order,
    ordered,
    select,
)

__all__ = ["build_matrix", "matrix_json", "places_matrix", "with_readers"]

SCALE_INSTRUMENTS = ("pei",)
LABEL_INSTRUMENTS = ("patterns",)


def build_matrix(
    frame: pd.DataFrame,
    *,
    experiment: str | None = None,
    history_order: Sequence[str] | None = None,
    resamples: int = ALPHA_RESAMPLES,
) -> AssessmentMatrix:
    """Every statistic of ``frame`` (a ``ratings_frame``). ``history_order``: the model
    labels in the experiment's order (rows and columns follow it)."""
    instruments = set(frame["instrument"])
    pei = (
        pei_matrix(frame, history_order=history_order, resamples=resamples)
        if "pei" in instruments
        else None
    )
    return AssessmentMatrix(
        experiment=experiment,
        runs=int(frame["run_id"].nunique()),
        records=len(frame),
        pei=with_readers(pei, frame) if pei is not None else None,
        patterns=patterns_grid(frame, history_order=history_order)
        if "patterns" in instruments
        else None,
    )


def places_matrix(
    places: Iterable[RunPlace],
    records: Mapping[str, Sequence[AssessmentEvent]],
    *,
    forks: ForkView = "none",
    experiment: str | None = None,
    resamples: int = ALPHA_RESAMPLES,
    selection: Selection | None = None,
) -> AssessmentMatrix:
    """The matrix of an experiment's runs (``places``: every run it has, placed by
    ``config.run_places``) from their records (run id -> records). It counts what
    ``select`` keeps: each replica's current attempt, the forks as ``forks`` says, never
    a fork made outside the experiment's file. The evaluators are named by the labels of
    every replica's model; rows and columns follow ``group_order``. One function for the
    CLI, the dashboard and the report, so the three give the same matrix. ``selection``:
    the runs to count when they were picked otherwise (the dashboard's runs by id)."""
    everyone = list(places)
    selection = select(everyone, forks) if selection is None else selection
    chosen = ordered(selection.runs)
    runs = rated_runs(chosen)
    frame = ratings_frame(
        [record for run in runs for record in records.get(run.run_id, ())],
        runs,
        labels=evaluator_labels(rated_runs(everyone)),
    )
    matrix = build_matrix(
        frame, experiment=experiment, history_order=group_order(chosen), resamples=resamples
    )
    return matrix.model_copy(update={"forks": forks, "left_out": selection.note_lines(forks)})


def with_readers(pei: PEIMatrix, frame: pd.DataFrame) -> PEIMatrix:
    """``pei`` with who read each cell's ratings (``read_by``: the parser, the
    follow-up question, a person), and how many cells rest on follow-ups."""
    rated = frame[
        (frame["instrument"] == "pei") & (frame["status"] == RATED) & frame["read_by"].notna()
    ]
    by_cell: dict[tuple[str, str], dict[str, int]] = {}
    for row in rated[["history_model", "evaluator", "read_by"]].itertuples(index=False):
        readers = by_cell.setdefault((str(row[0]), str(row[1])), {})
        readers[str(row[2])] = readers.get(str(row[2]), 0) + 1
    cells = [
        cell.model_copy(update={"read_by": by_cell.get((cell.history, cell.evaluator), {})})
        for cell in pei.cells
    ]
    total: dict[str, int] = {}
    for cell in cells:
        for reader, n in cell.read_by.items():
            total[reader] = total.get(reader, 0) + n
    return pei.model_copy(
        update={
            "cells": cells,
            "read_by": total,
            "follow_up_cells": sum(1 for c in cells if c.read_by.get("follow_up")),
            "person_cells": sum(1 for c in cells if c.read_by.get("person")),
        }
    )


def matrix_json(matrix: AssessmentMatrix) -> dict[str, Any]:
    """The matrix as JSON data (what ``--json`` prints and the dashboard serves)."""
    return matrix.model_dump(mode="json")
