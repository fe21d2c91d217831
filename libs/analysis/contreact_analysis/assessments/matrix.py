"""An experiment's assessments in one object: the PEI matrix and the patterns grid,
built from a ratings frame. The CLI's ``contreact assess matrix EXP [--json]`` and the
dashboard's Table 2 answer with the same object (``matrix_json`` is its JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from contreact_analysis.assessments.agreement import ALPHA_RESAMPLES
from contreact_analysis.assessments.patterns import patterns_grid
from contreact_analysis.assessments.pei import pei_matrix
from contreact_analysis.assessments.results import AssessmentMatrix

__all__ = ["build_matrix", "matrix_json"]

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
    return AssessmentMatrix(
        experiment=experiment,
        runs=int(frame["run_id"].nunique()),
        records=len(frame),
        pei=pei_matrix(frame, history_order=history_order, resamples=resamples)
        if "pei" in instruments
        else None,
        patterns=patterns_grid(frame, history_order=history_order)
        if "patterns" in instruments
        else None,
    )


def matrix_json(matrix: AssessmentMatrix) -> dict[str, Any]:
    """The matrix as JSON data (what ``--json`` prints and the dashboard serves)."""
    return matrix.model_dump(mode="json")
