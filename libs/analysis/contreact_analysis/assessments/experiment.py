"""An experiment's assessment matrix, read from where the platform keeps it: its runs
from the experiment's record in Redis (each replica's current run and earlier attempts,
and each fork its file made, whose parent and K its log's ``RunForked`` says) and the
other runs Redis lists for it (a ``contreact fork`` of a replica inherits the
experiment), the records through the shared reader (archive, then Redis), the matrix by
``matrix.places_matrix``, the function the dashboard and the report use. What
``contreact assess matrix EXP`` prints, and what a report of the experiment shows."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from contreact_analysis.assessments.agreement import ALPHA_RESAMPLES
from contreact_analysis.assessments.matrix import places_matrix
from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_analysis.exceptions import AnalysisError
from contreact_bus.assessments import read_assessments
from contreact_bus.exceptions import RunNotFound
from contreact_bus.experiments import logged_facts, replica_entries
from contreact_bus.runs import experiment_run_ids, load_events
from contreact_events.config.run_places import (
    ForkView,
    RunFacts,
    RunPlace,
    attempt_run_id,
    run_places,
)

__all__ = ["experiment_matrix", "experiment_places"]


async def experiment_places(
    redis: aioredis.Redis, archive_dir: Path, experiment: str
) -> list[RunPlace]:
    """The runs of ``experiment``, placed (``config.run_places``): its record's, their
    earlier attempts, and any other run Redis lists for it (read from its log). A run
    whose request the orchestrator has not taken yet has no log, and nothing rated: it
    is left out. AnalysisError when Redis holds no such experiment."""
    entries = await replica_entries(redis, experiment)
    if not entries:
        raise AnalysisError(
            f"no experiment '{experiment}' in Redis: `contreact experiment run FILE` starts one"
        )
    facts: dict[str, RunFacts] = {}
    for entry in entries.values():
        if entry.replica == f"{entry.label}-{entry.letter}":  # a replica, and its attempts
            for number in range(1, entry.attempt + 1):
                run_id = attempt_run_id(entry.first_run_id, number)
                facts[run_id] = RunFacts(run_id, experiment, entry.model)
    listed = await experiment_run_ids(redis, experiment)
    for run_id in [*(e.run_id for e in entries.values()), *listed]:
        if run_id not in facts:  # a fork (experiment_forks), or a run of its own
            try:
                events = await load_events(redis, archive_dir, run_id)
            except RunNotFound:
                continue
            facts[run_id] = logged_facts(events, experiment)
    return list(run_places(facts.values()).values())


async def experiment_matrix(
    redis: aioredis.Redis,
    archive_dir: Path,
    experiment: str,
    *,
    forks: ForkView = "none",
    resamples: int = ALPHA_RESAMPLES,
) -> AssessmentMatrix:
    """The matrix of ``experiment``'s replicas (and forks, as ``forks`` says).
    AnalysisError when Redis holds no such experiment."""
    places = await experiment_places(redis, archive_dir, experiment)
    records = await read_assessments(redis, archive_dir, [p.run_id for p in places])
    return places_matrix(places, records, forks=forks, experiment=experiment, resamples=resamples)
