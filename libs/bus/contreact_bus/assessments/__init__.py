"""A run's assessments on the Redis side: the records (``store``: claimed and recorded
once, archived append-only, one reader for the CLI, the dashboard and the analysis),
the ratings in force (``readings``: a rating asked again after a transient failure, a
person's reading), the evaluator calls an assessment job makes through the LLM worker
(``calls``), and the producer side: who rates (``evaluators``) and putting ratings on
rq's queue (``queueing``, which needs this package's ``rq`` extra, imported by name).

``from contreact_bus.assessments import read_assessments`` is the shared reader."""

from contreact_bus.assessments.readings import RatingKey, by_key, in_force, index_field
from contreact_bus.assessments.store import (
    ARCHIVE_SUFFIX,
    Claim,
    Recorded,
    add_reading,
    append_archive,
    archive_path,
    claim,
    claim_many,
    index,
    job_id,
    job_prefix,
    parse_index_field,
    read_archive,
    read_assessments,
    reclaim,
    record,
    records_at,
    redis_records,
    release_claim,
)

__all__ = [
    "ARCHIVE_SUFFIX",
    "Claim",
    "RatingKey",
    "Recorded",
    "add_reading",
    "append_archive",
    "archive_path",
    "by_key",
    "claim",
    "claim_many",
    "in_force",
    "index",
    "index_field",
    "job_id",
    "job_prefix",
    "parse_index_field",
    "read_archive",
    "read_assessments",
    "reclaim",
    "record",
    "records_at",
    "redis_records",
    "release_claim",
]
