"""The paper's own assessment results (arXiv:2509.21224): Table 2 (the cross-model PEI
means), each evaluator's mean as its text states it (section 5.4), and the behavioural
pattern it assigned to each of its 18 runs (section 5). Read from the data file that
ships with ``contreact_events`` (``protocol/paper_results.yaml``): one copy for the
whole platform.

``paper_ratings_frame`` turns Table 2's cells into a ratings frame (one rating per
cell), so the matrix code can be run on the paper's own figures: its evaluator means
must come out as the text states them.

Built from Table 2's own cells, the matrix reproduces the evaluator means the text
states for its five complete columns (1.6, 2.2, 3.7, 5.6, 6.1). The paper's
"inter-rater correlation 0.23" names no statistic; on its cells (Sonnet's column lost in
the transcription) Krippendorff's interval alpha is 0.26 (bootstrap interval -0.01 to
0.64), ICC(2,1) 0.35, ICC(3,1) 0.57 and the mean pairwise Spearman 0.64: every matrix
carries these (``agreement_on_cells``, computed once) and the CLI and the dashboard
print them beside the paper's figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import pandas as pd

from contreact_analysis.assessments.columns import empty_ratings, ratings_from_rows
from contreact_events.config.strict_yaml import load_yaml
from contreact_events.protocol import CITATION

__all__ = ["CITATION", "PaperTable2", "paper_patterns", "paper_ratings_frame", "paper_table2"]


@dataclass(frozen=True)
class PaperTable2:
    evaluators: list[str]
    """Column order of the paper's table."""
    histories: dict[str, list[float | None]]
    """History model -> one mean rating per evaluator (None: a digit lost in transcription)."""
    evaluator_means: dict[str, float]
    """Each evaluator's mean as the paper's text states it (section 5.4)."""
    inter_rater_correlation: float | None

    def cell(self, history: str, evaluator: str) -> float | None:
        row = self.histories.get(history)
        if row is None or evaluator not in self.evaluators:
            return None
        return row[self.evaluators.index(evaluator)]


@cache
def _results() -> dict[str, Any]:
    path = resources.files("contreact_events").joinpath("protocol", "paper_results.yaml")
    data: dict[str, Any] = load_yaml(path.read_text("utf-8"))
    return data


def paper_table2() -> PaperTable2:
    raw = _results()["table2"]
    return PaperTable2(
        evaluators=[str(e) for e in raw["evaluators"]],
        histories={
            str(k): [None if v is None else float(v) for v in row]
            for k, row in raw["histories"].items()
        },
        evaluator_means={str(k): float(v) for k, v in (raw.get("evaluator_means") or {}).items()},
        inter_rater_correlation=raw.get("inter_rater_correlation"),
    )


def paper_patterns() -> dict[str, str]:
    """The paper's label for each of its runs: ``"GPT5-A"`` -> ``"systematic_production"``."""
    out: dict[str, str] = {}
    for label, runs in (_results().get("patterns") or {}).items():
        for run in runs:
            out[str(run)] = str(label)
    return out


def paper_ratings_frame() -> pd.DataFrame:
    """Table 2's cells as ratings: one per (history model, evaluator) the transcription
    kept, as if each cell were one history rated once (replica ``paper``)."""
    table = paper_table2()
    rows = []
    for history, values in table.histories.items():
        for evaluator, value in zip(table.evaluators, values, strict=True):
            if value is None:
                continue
            rows.append(
                {
                    "run_id": f"paper-{history}",
                    "history_model": history,
                    "replica": "paper",
                    "evaluator": evaluator,
                    "evaluator_model": evaluator,
                    "instrument": "pei",
                    "repeat": 1,
                    "status": "rated",
                    "value": value,
                }
            )
    return ratings_from_rows(rows) if rows else empty_ratings()
