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
- 95% t intervals over histories (``contreact_analysis.intervals.mean_interval``) for
  cells, evaluator means and self-preference: none below three histories or when every
  history has the same rating, and then the reason;
- agreement (``agreement.py``) over the histories x evaluators table, with what each
  evaluator left out of it (the histories it gave no rating of, and why).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import cache

import pandas as pd

from contreact_analysis.assessments.agreement import (
    ALPHA_RESAMPLES,
    icc,
    interval_alpha,
    mean_pairwise_spearman,
)
from contreact_analysis.assessments.columns import RATED, UNRATED_STATUSES
from contreact_analysis.assessments.paper import CITATION, paper_ratings_frame, paper_table2
from contreact_analysis.assessments.results import (
    Agreement,
    Cell,
    EvaluatorSummary,
    IntervalOut,
    LeftOut,
    PaperReference,
    PEIMatrix,
    SelfPreference,
)
from contreact_analysis.intervals import mean_intervals

__all__ = ["NO_RECORD", "history_ratings", "pei_matrix"]

NO_RECORD = "no record"
"""Why an evaluator left a history out when it has no answer on it at all."""


def history_ratings(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, evaluator) with at least one rated answer: ``rating`` (mean over
    repeats) and ``n`` (rated answers)."""
    rated = frame[frame["status"] == RATED]
    grouped = rated.groupby(["run_id", "history_model", "evaluator"], observed=True)["value"]
    out = grouped.agg(rating="mean", n="count").reset_index()
    return out


def _intervals(samples: Sequence[Sequence[float]]) -> list[IntervalOut | None]:
    """The t interval of the mean of each sample of per-history figures (None for an
    empty one), in one scipy call per sample size."""
    given = [list(values) for values in samples if values]
    found = iter(mean_intervals(given, unit="histories"))
    out: list[IntervalOut | None] = []
    for values in samples:
        if not values:
            out.append(None)
            continue
        interval = next(found)
        out.append(
            IntervalOut(
                low=interval.low if interval.defined else None,
                high=interval.high if interval.defined else None,
                n=interval.n,
                confidence=interval.confidence,
                method=interval.method,
                reason=interval.reason,
            )
        )
    return out


def _order(seen: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    present = set(seen)
    first = [x for x in dict.fromkeys(preferred or []) if x in present]
    chosen = set(first)
    return first + [x for x in dict.fromkeys(seen) if x not in chosen]


def pei_matrix(
    frame: pd.DataFrame,
    *,
    instrument: str = "pei",
    history_order: Sequence[str] | None = None,
    resamples: int = ALPHA_RESAMPLES,
) -> PEIMatrix:
    """The matrix of ``frame``'s answers to ``instrument`` (a scale instrument);
    ``resamples``: of the bootstrap of Krippendorff's alpha."""
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
    keys = [(h, e) for h in histories for e in evaluators]
    cell_values = [[value for value, _ in rated.get(key, [])] for key in keys]
    summary_pairs = [[p for h in histories for p in rated.get((h, e), [])] for e in evaluators]
    runs: dict[str, tuple[str, dict[str, float]]] = {}
    for run, history, evaluator, rating, _ in table:
        runs.setdefault(run, (history, {}))[1][evaluator] = rating
    own = [_own_histories(e, runs) for e in evaluators if e in histories]
    samples = [*cell_values, *([v for v, _ in pairs] for pairs in summary_pairs)]
    samples += [[s - o for s, o in zip(selves, others, strict=True)] for _, selves, others in own]
    intervals = iter(_intervals(samples))
    cells = [
        Cell(
            history=history,
            evaluator=evaluator,
            mean=sum(values) / len(values) if values else None,
            n=sum(n for _, n in rated.get((history, evaluator), [])),
            histories=len(values),
            unrated=_ordered(misses.get((history, evaluator), Counter())),
            interval=next(intervals),
            self_rating=history == evaluator,
            paper=paper.cell(history, evaluator),
        )
        for (history, evaluator), values in zip(keys, cell_values, strict=True)
    ]
    summaries = [
        EvaluatorSummary(
            evaluator=evaluator,
            mean=sum(v for v, _ in pairs) / len(pairs) if pairs else None,
            histories=len(pairs),
            n=sum(n for _, n in pairs),
            unrated=sum(sum(misses.get((h, evaluator), Counter()).values()) for h in histories),
            interval=next(intervals),
            paper_mean=paper.evaluator_means.get(evaluator),
        )
        for evaluator, pairs in zip(evaluators, summary_pairs, strict=True)
    ]
    preferences = [_self_preference(*found, next(intervals)) for found in own]
    wide = _wide(per_history, evaluators)
    return PEIMatrix(
        instrument=instrument,
        histories=histories,
        evaluators=evaluators,
        cells=cells,
        evaluator_summaries=summaries,
        self_preference=preferences,
        agreement=_agreement(answers, wide, evaluators, resamples),
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


def _agreement(
    answers: pd.DataFrame,
    wide: pd.DataFrame,
    evaluators: Sequence[str],
    resamples: int = ALPHA_RESAMPLES,
) -> Agreement:
    return Agreement(
        alpha=interval_alpha(wide, resamples=resamples),
        icc2=icc(wide, "ICC2"),
        icc3=icc(wide, "ICC3"),
        spearman=mean_pairwise_spearman(wide),
        histories=int(answers["run_id"].nunique()),
        left_out=_left_out(answers, evaluators),
    )


@cache
def _paper_agreement() -> Agreement:
    """The agreement statistics of the paper's Table 2 cells (computed once)."""
    answers = paper_ratings_frame()
    evaluators = paper_table2().evaluators
    return _agreement(answers, _wide(history_ratings(answers), evaluators), evaluators)


def _left_out(answers: pd.DataFrame, evaluators: Sequence[str]) -> list[LeftOut]:
    """Per evaluator, the histories (runs with an answer by anyone) it gave no rating
    of, by the status of its last answer there (``NO_RECORD`` without one)."""
    runs = [str(r) for r in dict.fromkeys(answers["run_id"])]
    rated = answers["status"] == RATED
    pairs = answers[["run_id", "evaluator"]].astype(str).itertuples(index=False, name=None)
    has_rating = {pair for pair, ok in zip(pairs, rated, strict=True) if ok}
    last: dict[tuple[str, str], str] = {}
    unrated = answers[~rated].sort_values("repeat", kind="stable")
    for run, evaluator, status in unrated[["run_id", "evaluator", "status"]].itertuples(
        index=False, name=None
    ):
        last[(str(run), str(evaluator))] = str(status)
    out = []
    for evaluator in evaluators:
        why = Counter(
            last.get((run, evaluator), NO_RECORD)
            for run in runs
            if (run, evaluator) not in has_rating
        )
        order = [*UNRATED_STATUSES, NO_RECORD]
        out.append(
            LeftOut(
                evaluator=evaluator,
                histories=sum(why.values()),
                why={s: why[s] for s in order if why[s]},
            )
        )
    return out


def _ordered(counts: Counter[str]) -> dict[str, int]:
    return {status: int(counts[status]) for status in UNRATED_STATUSES if counts[status]}


def _own_histories(
    evaluator: str, runs: dict[str, tuple[str, dict[str, float]]]
) -> tuple[str, list[float], list[float]]:
    """An evaluator's ratings of its own histories, and the other evaluators' mean
    rating of each (histories no other evaluator rated are left out)."""
    selves, others = [], []
    for history, ratings in runs.values():
        rest = [v for e, v in ratings.items() if e != evaluator]
        if history != evaluator or evaluator not in ratings or not rest:
            continue
        selves.append(ratings[evaluator])
        others.append(sum(rest) / len(rest))
    return evaluator, selves, others


def _self_preference(
    evaluator: str, selves: list[float], others: list[float], interval: IntervalOut | None
) -> SelfPreference:
    n = len(selves)
    return SelfPreference(
        evaluator=evaluator,
        index=sum(s - o for s, o in zip(selves, others, strict=True)) / n if n else None,
        self_mean=sum(selves) / n if n else None,
        others_mean=sum(others) / n if n else None,
        histories=n,
        interval=interval,
    )
