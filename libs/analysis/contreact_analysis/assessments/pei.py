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

from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import cache

import pandas as pd

from contreact_analysis.assessments.agreement import icc, interval_alpha, mean_pairwise_spearman
from contreact_analysis.assessments.columns import RATED, UNRATED_STATUSES
from contreact_analysis.assessments.paper import CITATION, paper_ratings_frame, paper_table2
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
    # one pass each into plain dicts; the cells are then looked up, not filtered
    columns = ["run_id", "history_model", "evaluator", "rating", "n"]
    table = [
        (str(run), str(h), str(e), float(rating), int(n))
        for run, h, e, rating, n in per_history[columns].itertuples(index=False, name=None)
    ]
    rated: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for _, history, evaluator, rating, n in table:
        rated[(history, evaluator)].append((rating, n))
    misses: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for h, e, status in unrated[["history_model", "evaluator", "status"]].itertuples(
        index=False, name=None
    ):
        misses[(str(h), str(e))][str(status)] += 1
    cells = []
    for history in histories:
        for evaluator in evaluators:
            pairs = rated.get((history, evaluator), [])
            values = [value for value, _ in pairs]
            cells.append(
                Cell(
                    history=history,
                    evaluator=evaluator,
                    mean=sum(values) / len(values) if values else None,
                    n=sum(n for _, n in pairs),
                    histories=len(values),
                    unrated=_ordered(misses.get((history, evaluator), Counter())),
                    interval=_interval(values, resamples),
                    self_rating=history == evaluator,
                    paper=paper.cell(history, evaluator),
                )
            )
    summaries = []
    for evaluator in evaluators:
        pairs = [p for h in histories for p in rated.get((h, evaluator), [])]
        values = [value for value, _ in pairs]
        summaries.append(
            EvaluatorSummary(
                evaluator=evaluator,
                mean=sum(values) / len(values) if values else None,
                histories=len(values),
                n=sum(n for _, n in pairs),
                unrated=sum(sum(misses.get((h, evaluator), Counter()).values()) for h in histories),
                interval=_interval(values, resamples),
                paper_mean=paper.evaluator_means.get(evaluator),
            )
        )
    runs: dict[str, tuple[str, dict[str, float]]] = {}
    for run, history, evaluator, rating, _ in table:
        runs.setdefault(run, (history, {}))[1][evaluator] = rating
    wide = _wide(per_history, evaluators)
    return PEIMatrix(
        instrument=instrument,
        histories=histories,
        evaluators=evaluators,
        cells=cells,
        evaluator_summaries=summaries,
        self_preference=[
            _self_preference(e, runs, resamples) for e in evaluators if e in histories
        ],
        agreement=_agreement(wide),
        ratings=int((answers["status"] == RATED).sum()),
        unrated=_ordered(Counter(unrated["status"])),
        paper=PaperReference(
            evaluators=paper.evaluators,
            histories=paper.histories,
            evaluator_means=paper.evaluator_means,
            inter_rater_correlation=paper.inter_rater_correlation,
            citation=CITATION,
            agreement_on_cells=_paper_agreement(),
        ),
        resamples=resamples,
    )


def _wide(per_history: pd.DataFrame, evaluators: Sequence[str]) -> pd.DataFrame:
    """Histories x evaluators, NaN where an evaluator gave no rating."""
    present = set(per_history["evaluator"])
    return per_history.pivot_table(
        index="run_id", columns="evaluator", values="rating", aggfunc="mean", observed=True
    ).reindex(columns=[e for e in evaluators if e in present])


def _agreement(wide: pd.DataFrame) -> Agreement:
    return Agreement(
        alpha=interval_alpha(wide),
        icc2=icc(wide, "ICC2"),
        icc3=icc(wide, "ICC3"),
        spearman=mean_pairwise_spearman(wide),
    )


@cache
def _paper_agreement() -> Agreement:
    """The agreement statistics of the paper's Table 2 cells (computed once)."""
    cells = history_ratings(paper_ratings_frame())
    return _agreement(_wide(cells, paper_table2().evaluators))


def _ordered(counts: Counter[str]) -> dict[str, int]:
    return {status: int(counts[status]) for status in UNRATED_STATUSES if counts[status]}


def _self_preference(
    evaluator: str, runs: dict[str, tuple[str, dict[str, float]]], resamples: int
) -> SelfPreference:
    differences, selves, others = [], [], []
    for history, ratings in runs.values():
        rest = [v for e, v in ratings.items() if e != evaluator]
        if history != evaluator or evaluator not in ratings or not rest:
            continue
        selves.append(ratings[evaluator])
        others.append(sum(rest) / len(rest))
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
