"""An experiment's assessment matrix, read from where the platform keeps it: its runs
from the experiment's record in Redis (each replica's current run, and each fork its
file made, whose parent and K its log's ``RunForked`` says), the records through the
shared reader (archive, then Redis), the matrix by ``matrix.places_matrix``, the
function the dashboard and the report use. What ``contreact assess matrix EXP`` prints,
and what a report of the experiment shows."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from contreact_analysis.assessments.matrix import places_matrix
from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_analysis.exceptions import AnalysisError
from contreact_analysis.intervals import DEFAULT_RESAMPLES
from contreact_bus.assessments import read_assessments
from contreact_bus.exceptions import RunNotFound
from contreact_bus.experiments import replica_entries
from contreact_bus.runs import load_events
from contreact_events.catalog.fork import RunForked
from contreact_events.config.run_places import ForkView, RunFacts, RunPlace, run_places

__all__ = ["experiment_matrix", "experiment_places"]


async def experiment_places(
    redis: aioredis.Redis, archive_dir: Path, experiment: str
) -> list[RunPlace]:
    """The runs of ``experiment``'s record, placed (``config.run_places``). A fork whose
    request the orchestrator has not taken yet has no log, and nothing rated: it is left
    out. AnalysisError when Redis holds no such experiment."""
    entries = await replica_entries(redis, experiment)
    if not entries:
        raise AnalysisError(
            f"no experiment '{experiment}' in Redis: `contreact experiment run FILE` starts one"
        )
    facts = []
    for entry in entries.values():
        parent, at_cycle = "", 0
        if entry.replica != f"{entry.label}-{entry.letter}":  # a fork (experiment_forks)
            try:
                events = await load_events(redis, archive_dir, entry.run_id)
            except RunNotFound:
                continue
            forked = next((e for e in reversed(events) if isinstance(e, RunForked)), None)
            if forked is None:
                continue
            parent, at_cycle = forked.parent_run_id, forked.at_cycle
        facts.append(RunFacts(entry.run_id, experiment, entry.model, "", parent, at_cycle))
    return list(run_places(facts).values())


async def experiment_matrix(
    redis: aioredis.Redis,
    archive_dir: Path,
    experiment: str,
    *,
    forks: ForkView = "none",
    resamples: int = DEFAULT_RESAMPLES,
) -> AssessmentMatrix:
    """The matrix of ``experiment``'s replicas (and forks, as ``forks`` says).
    AnalysisError when Redis holds no such experiment."""
    places = await experiment_places(redis, archive_dir, experiment)
    records = await read_assessments(redis, archive_dir, [p.run_id for p in places])
    return places_matrix(places, records, forks=forks, experiment=experiment, resamples=resamples)
