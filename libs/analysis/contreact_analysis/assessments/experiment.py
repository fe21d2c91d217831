"""An experiment's assessment matrix, read from where the platform keeps it: the
replicas from the experiment's record in Redis (each one's current run, model label
and letter), the records through the shared reader (archive, then Redis). What
``contreact assess matrix EXP`` prints, and what a report of the experiment shows."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from contreact_analysis.assessments.agreement import ALPHA_RESAMPLES
from contreact_analysis.assessments.frame import rated_runs, ratings_frame
from contreact_analysis.assessments.matrix import build_matrix
from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_analysis.exceptions import AnalysisError
from contreact_bus.assessments import read_assessments
from contreact_bus.experiments import replica_entries

__all__ = ["experiment_matrix"]


async def experiment_matrix(
    redis: aioredis.Redis,
    archive_dir: Path,
    experiment: str,
    *,
    resamples: int = ALPHA_RESAMPLES,
) -> AssessmentMatrix:
    """The matrix of every replica of ``experiment`` (rows and columns in the order of
    the model labels). AnalysisError when Redis holds no such experiment."""
    entries = await replica_entries(redis, experiment)
    if not entries:
        raise AnalysisError(
            f"no experiment '{experiment}' in Redis: `contreact experiment run FILE` starts one"
        )
    ordered = sorted(entries.values(), key=lambda e: (e.label, len(e.letter), e.letter))
    runs = rated_runs(ordered)
    records = await read_assessments(redis, archive_dir, [r.run_id for r in runs])
    frame = ratings_frame([e for r in runs for e in records.get(r.run_id, [])], runs)
    order = list(dict.fromkeys(r.label for r in runs))
    return build_matrix(frame, experiment=experiment, history_order=order, resamples=resamples)
