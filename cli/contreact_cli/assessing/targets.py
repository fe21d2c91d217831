"""What `contreact assess` rates, and who rates it: the runs (named, or every replica
of an experiment, and its forks when asked) and the evaluators (named, or every model
of the experiment).

An experiment's runs are placed by the rule every table uses
(``contreact_events.config.run_places``): its replicas are rated, its forks (the
``fork`` section's) only with ``--forks as-rows|only``, and a fork that has not ended
is left out (and said so) rather than refusing the whole experiment.

An evaluator named by a model that one of the rated runs (or the experiment's runs)
ran is reached as that run reached it: the backend its model check resolved, its
hosts, client settings and (scripted) script; its generation settings are its own
(``contreact_bus.assessments.evaluators``). Any other is called on ``--backend``
(default ollama) at ``--host``. Every evaluator is checked before anything is queued.
A run named twice, or named and also in ``--experiment``, is rated once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis

from contreact_bus.assessments.evaluators import (
    BadEvaluator,
    Evaluator,
    evaluator_of_run,
    named_evaluator,
)
from contreact_bus.experiments import logged_facts, replica_entries
from contreact_bus.runs import load_events
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.config import ResolvedBackend
from contreact_events.config.run_places import ForkView, run_places, select
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState


@dataclass(frozen=True)
class RatedRun:
    run_id: str
    state: AgentState
    events: Sequence[Event]
    label: str
    """The history model's label (the experiment's label, else the run's model)."""


@dataclass(frozen=True)
class ExperimentRuns:
    rated: list[RatedRun]
    """What to rate (or look at): the replicas, the forks as asked."""
    replicas: list[RatedRun]
    """Every replica's current run: whose models rate by default."""
    left_out: list[str]
    """Forks left out because they have not ended, one line each."""


async def experiment_runs(
    redis: aioredis.Redis,
    settings: CLISettings,
    experiment: str,
    *,
    forks: ForkView = "as-rows",
    ended_forks: bool = False,
) -> ExperimentRuns:
    """Every replica's current run of ``experiment`` in replica order, its forks as
    ``forks`` says (``ended_forks``: only those that have ended)."""
    entries = await replica_entries(redis, experiment)
    if not entries:
        raise CLIError(
            f"no experiment '{experiment}' in Redis: `contreact experiment run FILE` starts one"
        )
    runs, facts = {}, []
    for replica in sorted(entries):
        entry = entries[replica]
        events = await load_events(redis, settings.archive_dir, entry.run_id)
        state = fold_all(events)
        facts.append(logged_facts(events, experiment, state))
        runs[entry.run_id] = (state, events)
    places = run_places(facts)
    rated, replicas, left_out = [], [], []
    for place in select(places.values(), forks).runs:
        state, events = runs[place.run_id]
        run = RatedRun(place.run_id, state, events, place.group)
        if place.is_fork and ended_forks and state.phase != "done":
            left_out.append(
                f"fork {place.run_id} ({place.group}) has not ended ({state.status}): left "
                "out; rate it once it has"
            )
            continue
        rated.append(run)
    for place in select(places.values(), "none").runs:
        state, events = runs[place.run_id]
        replicas.append(RatedRun(place.run_id, state, events, place.group))
    return ExperimentRuns(rated, replicas, left_out)


async def named_runs(
    redis: aioredis.Redis | None, settings: CLISettings, run_ids: Sequence[str]
) -> list[RatedRun]:
    out = []
    for run_id in dict.fromkeys(run_ids):
        events = await load_events(redis, settings.archive_dir, run_id)
        state = fold_all(events)
        out.append(RatedRun(run_id, state, events, state.model_name))
    return out


def unique_runs(runs: Sequence[RatedRun]) -> list[RatedRun]:
    """Each run once, where it was first listed, with the label it was last listed
    under (an experiment's label over a named run's model)."""
    return list({run.run_id: run for run in runs}.values())


def require_ended(runs: Sequence[RatedRun]) -> None:
    """A rating reads the history as the agent last saw it: only an ended run has one."""
    going = [r.run_id for r in runs if r.state.phase != "done"]
    if going:
        raise CLIError(
            f"run(s) {', '.join(going)} have not ended: rate a run once it has completed, "
            "failed or been cancelled (`contreact runs` shows their status)"
        )


def evaluators_for(
    runs: Sequence[RatedRun],
    models: Sequence[str] | None,
    *,
    backend: ResolvedBackend | None,
    host: str | None,
    temperature: float,
    seed: int | None = None,
) -> list[Evaluator]:
    """``models`` (None: every model the runs ran, in order), each as described above;
    one clear line (CLIError) for an evaluator that cannot be asked."""
    ran: dict[str, AgentState] = {}
    for run in runs:
        if run.state.backend is not None:
            ran.setdefault(run.state.model_name, run.state)
    if models is None:
        if not ran:
            raise CLIError("none of the runs reached its model: name the evaluators (--evaluator)")
        models = list(ran)
    out = []
    for model in dict.fromkeys(models):
        state = ran.get(model)
        try:
            if state is not None and backend is None:
                out.append(evaluator_of_run(state, temperature, seed))
            else:
                out.append(
                    named_evaluator(
                        model, backend or "ollama", host=host, temperature=temperature, seed=seed
                    )
                )
        except BadEvaluator as exc:
            raise CLIError(str(exc)) from None
    return out
