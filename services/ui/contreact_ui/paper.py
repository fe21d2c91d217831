"""The paper's reported results (Tables 1 and 2 of arXiv:2509.21224), shown beside the
platform's own figures as a reference. The data file ships with ``contreact_events``
(``protocol/paper_results.yaml``, with its citation in ``protocol/CITATION.md``): one
copy for the whole platform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contreact_events.catalog.assessment import ASSESSMENT_EVENT_CLASSES
from contreact_events.protocol import CITATION
from contreact_events.protocol.table1 import paper_results

__all__ = ["CITATION", "Table1", "Table2", "assessments_available", "table1", "table2"]


@dataclass(frozen=True)
class Table1:
    columns: list[str]
    rows: dict[str, list[float | None]]
    """metric -> one value per column (None where the transcription lost the digit)."""


@dataclass(frozen=True)
class Table2:
    evaluators: list[str]
    histories: dict[str, list[float | None]]
    inter_rater_correlation: float | None


def _results() -> dict[str, Any]:
    return paper_results()


def table1() -> Table1:
    raw = dict(_results()["table1"])
    columns = [str(c) for c in raw.pop("columns")]
    return Table1(columns=columns, rows={k: list(v) for k, v in raw.items()})


def table2() -> Table2:
    raw = _results()["table2"]
    return Table2(
        evaluators=[str(e) for e in raw["evaluators"]],
        histories={str(k): list(v) for k, v in raw["histories"].items()},
        inter_rater_correlation=raw.get("inter_rater_correlation"),
    )


def assessments_available() -> bool:
    """Whether the event catalog has assessment records (``RunAssessed``, in their own
    union: they are not run-log events); Table 2 shows this platform's ratings beside
    the paper's."""
    return "RunAssessed" in ASSESSMENT_EVENT_CLASSES
