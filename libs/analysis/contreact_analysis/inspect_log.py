"""Runs as Inspect logs (``.eval``), built with inspect_ai's own types and written with
its ``write_eval_log`` (its maintainers say the file format is not a frozen spec, so it
is never written by hand). A view of the run logs: nothing here feeds back into a run.

One log per (experiment, model[, condition]): each run a sample, a replica its epoch (A = 1, B = 2
...), a fork of the experiment's file a sample of its own (``fork of LABEL at K``) in its
target model's log. A sample's messages are the run's whole history (the system prompt
first); its events: a span per cycle, a model event per LLM call (the exact messages
and tools sent, the answer, usage with cost, timing), a tool event per tool call, the
operator exchanges and the diversity advisories as info events, an anchor after every
cycle (a run can be forked there) and, in a fork, a branch event where its own events
begin (those before are its parent's, copied). PEI ratings are the sample's score (one
value per evaluator), and the experiment's agreement figures (Krippendorff's alpha,
ICC) the score's metrics.

inspect_ai is an optional extra (``pip install 'contreact-cli[inspect]'``): importing
this module does not need it; ``eval_logs`` says how to install it when it is missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contreact_analysis.assessments.frame import evaluator_labels, rated_runs, ratings_frame
from contreact_analysis.assessments.matrix import places_matrix
from contreact_analysis.exceptions import AnalysisError
from contreact_analysis.inspect_transcript import Transcript, inspect_messages
from contreact_events.catalog import Event
from contreact_events.catalog.assessment import AssessmentEvent
from contreact_events.config.run_places import RunPlace

INSTALL = (
    "inspect_ai is not installed: `pip install 'contreact-cli[inspect]'` "
    "(or `pip install inspect-ai`), then export again"
)
TASK = "contreact"
PEI = "pei"


@dataclass(frozen=True)
class RunInput:
    """One run to export: its place in its experiment and its log."""

    place: RunPlace
    events: Sequence[Event]


def require_inspect() -> None:
    """AnalysisError, one line, when inspect_ai cannot be imported."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        raise AnalysisError(INSTALL) from None


def eval_logs(
    runs: Sequence[RunInput],
    records: Mapping[str, Sequence[AssessmentEvent]],
    *,
    resamples: int = 999,
) -> dict[str, Any]:
    """File name -> ``EvalLog`` for each (experiment, model, condition) of ``runs``
    (the condition only in an experiment with conditions)."""
    require_inspect()
    places = [run.place for run in runs]
    scores = _pei_scores(places, records)
    metrics = _agreement(places, records, resamples)
    groups: dict[tuple[str, str, str], list[RunInput]] = {}
    for run in runs:
        key = (run.place.experiment, _log_model(run.place), _condition(run))
        groups.setdefault(key, []).append(run)
    return {
        _file_name(experiment, model, condition): _eval_log(
            experiment, model, members, scores, metrics, condition=condition
        )
        for (experiment, model, condition), members in sorted(groups.items())
    }


def write_eval_logs(logs: Mapping[str, Any], folder: Path) -> list[Path]:
    """Each log into ``folder`` through ``write_eval_log``; the paths written."""
    from inspect_ai.log import write_eval_log

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, log in logs.items():
        path = folder / name
        write_eval_log(log, str(path), format="eval")
        paths.append(path)
    return paths


def _log_model(place: RunPlace) -> str:
    """The model whose log a run goes in: a fork's target's, anyone else's own."""
    return place.model


def _condition(run: RunInput) -> str:
    """The experiment's condition the run ran in (its config's), "" for none."""
    for event in run.events:
        config = getattr(event, "config", None)
        if config is not None:
            return getattr(config, "condition", None) or ""
    return ""


def _file_name(experiment: str, model: str, condition: str = "") -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model)
    return f"{experiment or 'runs'}_{safe}{f'_{condition}' if condition else ''}.eval"


def _sample_id(place: RunPlace) -> str:
    if place.kind == "fork" and place.at_cycle:
        return f"fork of {place.group.split(' -> ')[0]} at {place.at_cycle}"
    return place.label or place.group or place.model


def _epoch(place: RunPlace) -> int | None:
    """A replica's letter as an epoch (A, B, ... Z, AA ...: 1, 2, ... 26, 27 ...); None
    for a run that is no replica (it is numbered among its sample's runs)."""
    letter = place.letter
    if not (1 <= len(letter) <= 2 and letter.isalpha() and letter.isupper()):
        return None
    number = 0
    for char in letter:
        number = number * 26 + (ord(char) - ord("A") + 1)
    return number


def _pei_scores(
    places: Sequence[RunPlace], records: Mapping[str, Sequence[AssessmentEvent]]
) -> dict[str, dict[str, float]]:
    """Run id -> evaluator label -> its PEI rating (the mean of its repeats in force)."""
    rated = rated_runs(places)
    mine = [r for place in places for r in records.get(place.run_id, ())]
    if not mine:
        return {}
    frame = ratings_frame(mine, rated, labels=evaluator_labels(rated))
    frame = frame[(frame["instrument"] == PEI) & frame["value"].notna()]
    out: dict[str, dict[str, float]] = {}
    for (run_id, evaluator), values in frame.groupby(["run_id", "evaluator"])["value"]:
        out.setdefault(str(run_id), {})[str(evaluator)] = float(values.mean())
    return out


def _agreement(
    places: Sequence[RunPlace], records: Mapping[str, Sequence[AssessmentEvent]], resamples: int
) -> dict[str, float]:
    """The PEI agreement figures of the experiment, as the dashboard computes them."""
    if not any(records.get(p.run_id) for p in places):
        return {}
    pei = places_matrix(places, records, forks="as-rows", resamples=resamples).pei
    if pei is None:
        return {}
    agreement = pei.agreement
    figures = {
        "krippendorff_alpha": agreement.alpha.alpha,
        "icc2_1": agreement.icc2.icc,
        "icc3_1": agreement.icc3.icc,
        "mean_pairwise_spearman": agreement.spearman.mean,
    }
    return {k: float(v) for k, v in figures.items() if v is not None and math.isfinite(v)}


def _eval_log(
    experiment: str,
    model: str,
    runs: Sequence[RunInput],
    scores: Mapping[str, Mapping[str, float]],
    metrics: Mapping[str, float],
    *,
    condition: str = "",
) -> Any:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage
    from inspect_ai.viewer import ViewerConfig

    taken: dict[str, set[int]] = {}
    epochs = []
    for run in sorted(runs, key=lambda r: r.place.run_id):
        sample_id, epoch = _sample_id(run.place), _epoch(run.place)
        used = taken.setdefault(sample_id, set())
        if epoch is None or epoch in used:
            epoch = next(n for n in range(1, len(runs) + 2) if n not in used)
        used.add(epoch)
        epochs.append((run, epoch))
    samples = [_sample(run, epoch, scores.get(run.place.run_id)) for run, epoch in epochs]
    samples.sort(key=lambda s: (str(s.id), s.epoch))
    created = min(s.started_at for s in samples if s.started_at) if samples else None
    usage = ModelUsage()
    for sample in samples:
        for one in sample.model_usage.values():
            usage = usage + one
    rated = [s for s in samples if s.scores]
    pei_means = [
        sum(v.values()) / len(v) for s in rated if isinstance(v := s.scores[PEI].value, dict) and v
    ]
    results_metrics = {}
    if pei_means:  # first: the viewer's headline figure
        results_metrics["mean"] = EvalMetric(name="mean", value=sum(pei_means) / len(pei_means))
    for name, value in sorted(metrics.items()):
        results_metrics[name] = EvalMetric(name=name, value=value)
    status = "success" if all(s.error is None for s in samples) else "error"
    return EvalLog(
        status=status,
        eval=EvalSpec(
            created=created or "1970-01-01T00:00:00+00:00",
            task="/".join(part for part in (TASK, experiment, condition) if part),
            dataset=EvalDataset(
                name=experiment or None,
                samples=len({s.id for s in samples}),
                sample_ids=sorted({str(s.id) for s in samples}),
            ),
            model=model,
            config=EvalConfig(epochs=max((s.epoch for s in samples), default=1)),
            viewer=ViewerConfig(trust_content=False),  # agent text: shown as plain text
            metadata={
                "contreact_experiment": experiment,
                "contreact_runs": [run.place.run_id for run in runs],
            },
        ),
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=sum(s.error is None for s in samples),
            scores=[
                EvalScore(
                    name=PEI,
                    scorer="contreact-pei",
                    scored_samples=len(rated),
                    unscored_samples=len(samples) - len(rated),
                    metrics=results_metrics,
                )
            ]
            if rated or metrics
            else [],
        ),
        stats=EvalStats(
            started_at=str(created or ""),
            completed_at=max((s.completed_at for s in samples if s.completed_at), default=""),
            model_usage={model: usage},
        ),
        samples=samples,
    )


def _sample(run: RunInput, epoch: int, pei: Mapping[str, float] | None) -> Any:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    place = run.place
    builder = Transcript(place)
    for event in run.events:
        builder.add(event)
    state = builder.state
    model = state.resolved_model or state.model_name
    last = state.reflection_history[-1] if state.reflection_history else ""
    events = run.events
    failure = state.failure_reason or state.stop_reason
    return EvalSample(
        id=_sample_id(place),
        epoch=epoch,
        input=builder.input,
        target="",
        messages=inspect_messages(builder.history(state), model),
        output=ModelOutput.from_content(model, last),
        scores={
            PEI: Score(
                value=dict(pei),
                explanation="PEI ratings of this run by each evaluator (their label)",
            )
        }
        if pei
        else None,
        metadata={
            "run_id": place.run_id,
            "status": state.status,
            "replica": place.letter,
            "kind": place.kind,
            "parent_run_id": place.parent_run_id or None,
            "at_cycle": place.at_cycle or None,
            "cycles": len(state.cycle_metrics),
            "reflections": list(state.reflection_history),
            "cost": state.spent_cost,
            "uncosted_calls": state.uncosted_calls,
            "failure_reason": failure,
        },
        events=builder.events,
        model_usage={model: builder.usage},
        started_at=events[0].ts if events else None,
        completed_at=events[-1].ts if events and state.terminal else None,
        total_time=(events[-1].ts - events[0].ts).total_seconds() if events else None,
        error=EvalError(message=failure, traceback="", traceback_ansi="")
        if state.status == "failed" and failure
        else None,
    )
