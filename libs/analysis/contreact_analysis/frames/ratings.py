"""The assessments table of an experiment: its runs' ratings (``RunAssessed`` and
``AssessmentFailed`` records) as the assessment statistics read them
(``assessments.frame.ratings_frame``), one row per record joined to the rated run's
group (its model label, or a fork's ``A -> B at K``) and replica: the replicas' and the
forks' of the experiment's record. None when Redis holds no record of the experiment's
runs or nothing was assessed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import redis.asyncio as aioredis

from contreact_analysis.assessments.experiment import experiment_places
from contreact_analysis.assessments.frame import rated_runs, ratings_frame
from contreact_analysis.exceptions import AnalysisError
from contreact_bus.assessments import read_assessments


async def experiment_ratings(
    redis: aioredis.Redis, archive_dir: Path, experiment: str
) -> pd.DataFrame | None:
    try:
        places = await experiment_places(redis, archive_dir, experiment)
    except AnalysisError:
        return None
    runs = rated_runs(places)
    records = await read_assessments(redis, archive_dir, [r.run_id for r in runs])
    frame = ratings_frame([e for r in runs for e in records.get(r.run_id, [])], runs)
    return frame if not frame.empty else None
