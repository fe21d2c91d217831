"""The assessments table of an experiment: its runs' ratings (``RunAssessed`` and
``AssessmentFailed`` records) as the assessment statistics read them
(``assessments.frame.ratings_frame``), one row per record joined to the rated run's
group (its model label, or a fork's ``A -> B at K``) and replica: each replica's current
run and each fork of the experiment's file (``run_places.select``, forks as rows).
None when Redis holds no record of the experiment's runs or nothing was assessed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import redis.asyncio as aioredis

from contreact_analysis.assessments.experiment import experiment_places
from contreact_analysis.assessments.frame import evaluator_labels, rated_runs, ratings_frame
from contreact_analysis.exceptions import AnalysisError
from contreact_bus.assessments import read_assessments
from contreact_events.config.run_places import select


async def experiment_ratings(
    redis: aioredis.Redis, archive_dir: Path, experiment: str
) -> pd.DataFrame | None:
    try:
        places = await experiment_places(redis, archive_dir, experiment)
    except AnalysisError:
        return None
    runs = rated_runs(select(places, "as-rows").runs)
    records = await read_assessments(redis, archive_dir, [r.run_id for r in runs])
    labels = evaluator_labels(rated_runs(places))
    frame = ratings_frame([e for r in runs for e in records.get(r.run_id, [])], runs, labels=labels)
    return frame if not frame.empty else None
