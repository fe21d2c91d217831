"""A run's assessments on the Redis side: the records (``store``: claimed and recorded
once, archived append-only, one reader for the CLI, the dashboard and the analysis)
and the evaluator calls an assessment job makes through the LLM worker (``calls``).

``from contreact_bus.assessments import read_assessments`` is the shared reader."""

from contreact_bus.assessments.store import (
    ARCHIVE_SUFFIX,
    Claim,
    RatingKey,
    Recorded,
    append_archive,
    archive_path,
    by_key,
    claim,
    claim_many,
    index,
    index_field,
    job_id,
    job_prefix,
    parse_index_field,
    read_archive,
    read_assessments,
    record,
    redis_records,
    release_claim,
)

__all__ = [
    "ARCHIVE_SUFFIX",
    "Claim",
    "RatingKey",
    "Recorded",
    "append_archive",
    "archive_path",
    "by_key",
    "claim",
    "claim_many",
    "index",
    "index_field",
    "job_id",
    "job_prefix",
    "parse_index_field",
    "read_archive",
    "read_assessments",
    "record",
    "redis_records",
    "release_claim",
]
