"""The ratings frame's columns, declared once as data (name, dtype, default, meaning),
and the answer statuses: which count as a rating and which are counted but never
averaged in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COLUMNS",
    "RATED",
    "UNRATED_STATUSES",
    "Column",
    "empty_ratings",
    "ratings_from_rows",
]

RATED = "rated"
UNRATED_STATUSES = ("unparseable", "refused", "off_scale", "failed")
"""An answer that is not a rating: the parser found no level, the evaluator refused, the
level is off the scale, or no answer came back (``AssessmentFailed``). Each is counted
per cell, never averaged in."""


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    default: Any
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", None, "the rated run (the history)"),
    Column("history_model", "string", None, "the rated run's model label (Table 2's row)"),
    Column("replica", "string", "", "the rated run's replica letter (A, B, C ...)"),
    Column("evaluator", "string", None, "the evaluator's label (Table 2's column)"),
    Column("evaluator_model", "string", None, "the model the evaluator call asked for"),
    Column("instrument", "string", None, "pei or patterns"),
    Column("repeat", "int64", 1, "which repeat of this (run, evaluator, instrument)"),
    Column("status", "string", RATED, "rated, or why not: " + ", ".join(UNRATED_STATUSES)),
    Column("value", "float64", np.nan, "the rating (scale instruments); NaN unless rated"),
    Column("label", "string", None, "the label (label instruments); missing unless rated"),
    Column("reason", "string", None, "the evaluator's one-sentence reason (patterns)"),
    Column("raw", "string", "", "the evaluator's raw answer, or the error of a failed one"),
    Column("note", "string", "", "why the parser decided as it did"),
    Column("read_by", "string", None, "who read the rating: parser, follow_up or person"),
    Column("reader", "string", None, "the person who read it (read_by person)"),
    Column("read_at", "datetime64[ns, UTC]", pd.NaT, "when the person read it"),
    Column("event_id", "string", "", "the assessment record's event id"),
    Column("ts", "datetime64[ns, UTC]", pd.NaT, "when it was recorded"),
)
NAMES = tuple(c.name for c in COLUMNS)


def ratings_from_rows(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A ratings frame from row dicts; missing columns take their default. Unknown keys
    are refused (a typo would otherwise vanish)."""
    records = []
    for row in rows:
        unknown = set(row) - set(NAMES)
        if unknown:
            raise ValueError(f"ratings row: unknown column(s) {sorted(unknown)}; known: {NAMES}")
        records.append({c.name: row.get(c.name, c.default) for c in COLUMNS})
    if not records:
        return empty_ratings()
    frame = pd.DataFrame.from_records(records, columns=list(NAMES))
    return _typed(frame)


def empty_ratings() -> pd.DataFrame:
    return _typed(pd.DataFrame({name: [] for name in NAMES}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for column in COLUMNS:
        if column.dtype.startswith("datetime"):
            frame[column.name] = pd.to_datetime(frame[column.name], utc=True)
        else:
            frame[column.name] = frame[column.name].astype(column.dtype)  # type: ignore[call-overload]
    rated = frame["status"] == RATED
    frame.loc[~rated, "value"] = np.nan
    return frame
