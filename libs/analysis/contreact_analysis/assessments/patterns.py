"""The behavioural-patterns instrument: a run x evaluator grid of labels, Fleiss' kappa
between the evaluators, and the paper's own label for each run beside ours.

An evaluator's label for a run is its most frequent rated label over repeats (the
earliest repeat's on a tie: one answer each in the paper). A run without a rated label
from an evaluator shows why (unparseable, refused, failed); Fleiss' kappa counts only the
runs every evaluator labelled.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from contreact_analysis.assessments.agreement import fleiss_kappa_of
from contreact_analysis.assessments.columns import RATED, UNRATED_STATUSES
from contreact_analysis.assessments.paper import paper_patterns
from contreact_analysis.assessments.results import PatternRow, PatternsGrid
from contreact_events.instruments import load_instrument

__all__ = ["patterns_grid"]


def _label_of(answers: pd.DataFrame) -> str | None:
    rated = answers[answers["status"] == RATED].sort_values("repeat")
    if rated.empty:
        return None
    counts = rated["label"].value_counts(sort=False)
    best = int(counts.max())
    return str(next(label for label in rated["label"] if counts[label] == best))


def patterns_grid(
    frame: pd.DataFrame,
    *,
    instrument: str = "patterns",
    history_order: Sequence[str] | None = None,
) -> PatternsGrid:
    answers = frame[frame["instrument"] == instrument]
    paper = paper_patterns()
    seen_histories = list(dict.fromkeys(answers["history_model"]))
    order = [h for h in (history_order or []) if h in seen_histories]
    order += [h for h in seen_histories if h not in order]
    evaluators = list(dict.fromkeys(answers["evaluator"]))
    evaluators = [e for e in order if e in evaluators] + [e for e in evaluators if e not in order]
    categories = [label.key for label in load_instrument(instrument).labels]
    categories += [c for c in dict.fromkeys(paper.values()) if c not in categories]
    categories += sorted(
        {str(x) for x in answers.loc[answers["status"] == RATED, "label"]} - set(categories)
    )
    runs = answers.drop_duplicates("run_id")[["run_id", "history_model", "replica"]]
    runs = runs.assign(order=runs["history_model"].map({h: i for i, h in enumerate(order)}))
    rows = []
    for run in runs.sort_values(["order", "replica", "run_id"]).itertuples():
        mine = answers[answers["run_id"] == run.run_id]
        labels: dict[str, str | None] = {}
        why: dict[str, str] = {}
        for evaluator in evaluators:
            theirs = mine[mine["evaluator"] == evaluator]
            labels[evaluator] = _label_of(theirs)
            if labels[evaluator] is None and not theirs.empty:
                why[evaluator] = str(theirs.sort_values("repeat")["status"].iloc[-1])
        paper_label = paper.get(f"{run.history_model}-{run.replica}")
        rows.append(
            PatternRow(
                run_id=str(run.run_id),
                history=str(run.history_model),
                replica=str(run.replica),
                paper_label=paper_label,
                labels=labels,
                unrated=why,
                agree_with_paper=sum(1 for v in labels.values() if v and v == paper_label),
            )
        )
    table = pd.DataFrame(
        [[row.labels[e] for e in evaluators] for row in rows],
        columns=evaluators,
        index=[row.run_id for row in rows],
    )
    counts = answers.loc[answers["status"] != RATED, "status"].value_counts()
    return PatternsGrid(
        instrument=instrument,
        evaluators=evaluators,
        categories=categories,
        rows=rows,
        kappa=fleiss_kappa_of(table, categories),
        ratings=int((answers["status"] == RATED).sum()),
        unrated={s: int(counts[s]) for s in UNRATED_STATUSES if s in counts},
    )
