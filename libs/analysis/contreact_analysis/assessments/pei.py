"""The cross-model PEI matrix (the paper's Table 2) and its statistics.

A history is one rated run. Its rating by an evaluator is the mean of that
evaluator's rated answers on it over repeats (one answer each in the paper); unrated
answers (unparseable, refused, off the scale, failed) are counted, never averaged in.
Then, each over histories, so a history weighs the same whatever its repeats:

- a cell (history model x evaluator) is the mean of the ratings of that model's
  histories (its replicas) by that evaluator, with ``n`` (rated answers), ``histories``
  and the unrated answers by status;
- the diagonal: the cells where a model rates its own histories;
- an evaluator's mean is over every history it rated (Table 2's column means in the
  paper's balanced design);
- a self-preference index: on each of a model's own histories, its rating minus the mean
  of the other evaluators' ratings of the same history, averaged over those histories;
- bootstrap 95% intervals over histories (``contreact_analysis.intervals``) for cells,
  evaluator means and self-preference;
- agreement (``agreement.py``) over the histories x evaluators table.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from contreact_analysis.assessments.agreement import icc, interval_alpha, mean_pairwise_spearman
from contreact_analysis.assessments.columns import RATED, UNRATED_STATUSES
from contreact_analysis.assessments.paper import CITATION, paper_table2
from contreact_analysis.assessments.results import (
    Agreement,
    Cell,
    EvaluatorSummary,
    IntervalOut,
    PaperReference,
    PEIMatrix,
    SelfPreference,
)
from contreact_analysis.intervals import DEFAULT_RESAMPLES, bootstrap_interval

__all__ = ["history_ratings", "pei_matrix"]


def history_ratings(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, evaluator) with at least one rated answer: ``rating`` (mean over
    repeats) and ``n`` (rated answers)."""
    rated = frame[frame["status"] == RATED]
    grouped = rated.groupby(["run_id", "history_model", "evaluator"], observed=True)["value"]
    out = grouped.agg(rating="mean", n="count").reset_index()
    return out


def _interval(values: Sequence[float], resamples: int) -> IntervalOut | None:
    if len(values) < 2:
        return None
    found = bootstrap_interval(list(values), resamples=resamples)
    if not found.defined:
        return None
    return IntervalOut(
        low=found.low, high=found.high, n=found.n, confidence=found.confidence, method=found.method
    )


def _order(seen: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    first = [x for x in (preferred or []) if x in seen]
    return first + [x for x in dict.fromkeys(seen) if x not in first]


def pei_matrix(
    frame: pd.DataFrame,
    *,
    instrument: str = "pei",
    history_order: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
) -> PEIMatrix:
    """The matrix of ``frame``'s answers to ``instrument`` (a scale instrument)."""
    answers = frame[frame["instrument"] == instrument]
    per_history = history_ratings(answers)
    histories = _order(list(answers["history_model"]), history_order)
    evaluators = _order(list(answers["evaluator"]), histories)
    paper = paper_table2()
    unrated = answers[answers["status"] != RATED]
    cells = []
    for history in histories:
        for evaluator in evaluators:
            mine = per_history[
                (per_history["history_model"] == history) & (per_history["evaluator"] == evaluator)
            ]
            misses = unrated[
                (unrated["history_model"] == history) & (unrated["evaluator"] == evaluator)
            ]
            values = [float(v) for v in mine["rating"]]
            cells.append(
                Cell(
                    history=history,
                    evaluator=evaluator,
                    mean=sum(values) / len(values) if values else None,
                    n=int(mine["n"].sum()),
                    histories=len(values),
                    unrated=_counts(misses),
                    interval=_interval(values, resamples),
                    self_rating=history == evaluator,
                    paper=paper.cell(history, evaluator),
                )
            )
    summaries = []
    for evaluator in evaluators:
        mine = per_history[per_history["evaluator"] == evaluator]
        values = [float(v) for v in mine["rating"]]
        summaries.append(
            EvaluatorSummary(
                evaluator=evaluator,
                mean=sum(values) / len(values) if values else None,
                histories=len(values),
                n=int(mine["n"].sum()),
                unrated=int((unrated["evaluator"] == evaluator).sum()),
                interval=_interval(values, resamples),
                paper_mean=paper.evaluator_means.get(evaluator),
            )
        )
    wide = per_history.pivot_table(
        index="run_id", columns="evaluator", values="rating", aggfunc="mean", observed=True
    ).reindex(columns=[e for e in evaluators if e in set(per_history["evaluator"])])
    return PEIMatrix(
        instrument=instrument,
        histories=histories,
        evaluators=evaluators,
        cells=cells,
        evaluator_summaries=summaries,
        self_preference=[
            _self_preference(e, per_history, resamples) for e in evaluators if e in histories
        ],
        agreement=Agreement(
            alpha=interval_alpha(wide),
            icc2=icc(wide, "ICC2"),
            icc3=icc(wide, "ICC3"),
            spearman=mean_pairwise_spearman(wide),
        ),
        ratings=int((answers["status"] == RATED).sum()),
        unrated=_counts(unrated),
        paper=PaperReference(
            evaluators=paper.evaluators,
            histories=paper.histories,
            evaluator_means=paper.evaluator_means,
            inter_rater_correlation=paper.inter_rater_correlation,
            citation=CITATION,
        ),
        resamples=resamples,
    )


def _counts(rows: pd.DataFrame) -> dict[str, int]:
    counts = rows["status"].value_counts()
    return {status: int(counts[status]) for status in UNRATED_STATUSES if status in counts}


def _self_preference(evaluator: str, per_history: pd.DataFrame, resamples: int) -> SelfPreference:
    own = per_history[per_history["history_model"] == evaluator]
    differences, selves, others = [], [], []
    for _, ratings in own.groupby("run_id", observed=True):
        mine = ratings[ratings["evaluator"] == evaluator]["rating"]
        rest = ratings[ratings["evaluator"] != evaluator]["rating"]
        if mine.empty or rest.empty:
            continue
        selves.append(float(mine.iloc[0]))
        others.append(float(rest.mean()))
        differences.append(selves[-1] - others[-1])
    n = len(differences)
    return SelfPreference(
        evaluator=evaluator,
        index=sum(differences) / n if n else None,
        self_mean=sum(selves) / n if n else None,
        others_mean=sum(others) / n if n else None,
        histories=n,
        interval=_interval(differences, resamples),
    )
