"""A run's assessments: where they live, how each is claimed and recorded once, and the
one reader the CLI, the dashboard and the analysis share.

Assessments are not run-log events: a finished run's log, digest and archive never
change. Each run has a stream of its own, ``run:{RUN}:assessments`` (``RunAssessed``,
``AssessmentFailed``), and an index hash beside it with one field per (instrument,
evaluator, repeat): ``job:ID`` once the rating is claimed (enqueued), ``entry:ID`` once
its record is in the stream. Both keys carry the run's hash tag, so each script below
runs on one Cluster slot, as the run log's append does.

- ``claim``: one script, HSETNX of the field: enqueueing a rating that is claimed or
  done adds nothing. Asked for the next repeat (``--force``), the script takes the
  highest repeat of (instrument, evaluator) plus one, in the same step.
- ``record``: one script: if the field already names an entry, that entry is the
  answer (a retried job, a worker killed after its write, records nothing twice);
  else XADD the record and point the field at it.
- ``reclaim``: one script: a rating recorded as failed for a transient reason is
  claimed again for a new job (the field goes from ``entry:ID`` back to ``job:ID``,
  only if it still names that failure); its answer then replaces the failure
  (``readings.in_force``).
- A person's reading (``add_reading``) is appended to the stream with no index field:
  it is no rating, and never changes one.
- The archive ``DATA/runs/RUN.assessments.jsonl`` is append-only: each record is
  appended once (looked up by event id under an exclusive lock), flushed and fsynced.
  The Redis stream is not trimmed and does not expire; the archive is the copy that
  outlives Redis.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson
import redis.asyncio as aioredis

from contreact_bus.assessments.readings import RatingKey
from contreact_bus.failover.durability import NO_WAIT, Durability
from contreact_bus.replies import entries, text, text_map
from contreact_events.catalog.assessment import AssessmentEvent, AssessmentRead
from contreact_events.exceptions import CorruptEvent
from contreact_events.names import run_assessment_index_key, run_assessments_key
from contreact_events.wire.codec import (
    EVENT_FIELD,
    assessment_from_json,
    assessment_to_fields,
    assessment_to_json,
)

ARCHIVE_SUFFIX = ".assessments.jsonl"

CLAIM_SCRIPT = """
local base = ARGV[1] .. '\\n' .. ARGV[2] .. '\\n'
local r = tonumber(ARGV[3])
if r == 0 then
  local top = 0
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(f, 1, #base) == base then
      local n = tonumber(string.sub(f, #base + 1))
      if n and n > top then top = n end
    end
  end
  r = top + 1
end
local job = ARGV[4] .. r
if redis.call('HSETNX', KEYS[1], base .. r, 'job:' .. job) == 1 then
  return {r, 'job:' .. job, 1}
end
return {r, redis.call('HGET', KEYS[1], base .. r), 0}
"""
"""Claim (instrument, evaluator, repeat) of a run for a job, atomically on the run's
index (KEYS[1]). ARGV: instrument, evaluator, repeat (0: the next one free),
job-id prefix (the repeat completes it). Returns {repeat, value held, 1 if claimed
now}."""

RECORD_SCRIPT = """
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held and string.sub(held, 1, 6) == 'entry:' then
  return {0, string.sub(held, 7)}
end
local id = redis.call('XADD', KEYS[2], '*', unpack(ARGV, 2))
redis.call('HSET', KEYS[1], ARGV[1], 'entry:' .. id)
return {1, id}
"""
"""Record an assessment once: KEYS[1] the run's index, KEYS[2] its stream; ARGV[1]
the index field, then the stream entry's fields. Returns {1, new entry id} or
{0, the entry already recorded for that field}."""


@dataclass(frozen=True)
class Claim:
    repeat: int
    job_id: str
    claimed: bool
    """True: claimed by this call (enqueue the job); False: claimed or done before."""
    entry_id: str | None = None
    """The recorded entry, when the rating is done."""


@dataclass(frozen=True)
class Recorded:
    entry_id: str
    new: bool
    """False: the rating was recorded before (this record was not written again)."""


def parse_index_field(field: str) -> RatingKey | None:
    parts = field.split("\n")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return RatingKey(parts[0], parts[1], int(parts[2]))


def job_prefix(run_id: str, instrument: str, evaluator: str) -> str:
    """The job id of a rating, but its repeat: readable, and in the shape rq takes
    (letters, digits, ``_`` and ``-``). The run id's dots become ``_``, so the hash
    of the run id and the evaluator (which may hold ``:``, ``/`` or braces) keeps
    ids of different ratings apart."""
    digest = hashlib.sha256(f"{run_id}\n{evaluator}".encode()).hexdigest()[:12]
    readable = run_id.replace(".", "_")
    return f"assess-{readable}-{instrument}-{digest}-r"


def job_id(run_id: str, key: RatingKey) -> str:
    return f"{job_prefix(run_id, key.instrument, key.evaluator)}{key.repeat}"


# --- Redis ------------------------------------------------------------------------------


async def claim(
    redis: aioredis.Redis, run_id: str, instrument: str, evaluator: str, repeat: int | None
) -> Claim:
    """Claim one rating of ``run_id`` for a job; ``repeat`` None: the next repeat free
    (a forced re-run). A rating claimed or recorded before is not claimed again."""
    (got,) = await claim_many(redis, [(run_id, instrument, evaluator, repeat)])
    return got


async def claim_many(
    redis: aioredis.Redis, asks: Sequence[tuple[str, str, str, int | None]]
) -> list[Claim]:
    """``claim`` for each (run, instrument, evaluator, repeat), in one round trip (one
    script call each, on its run's slot; Redis runs them in order, so two forced asks
    of the same pair take two repeats)."""
    for _run, _instrument, _evaluator, repeat in asks:
        if repeat is not None and repeat < 1:
            raise ValueError(f"repeat {repeat}: repeats count from 1")
    async with redis.pipeline(transaction=False) as pipe:
        for run_id, instrument, evaluator, repeat in asks:
            pipe.eval(
                CLAIM_SCRIPT,
                1,
                run_assessment_index_key(run_id),
                instrument,
                evaluator,
                repeat or 0,
                job_prefix(run_id, instrument, evaluator),
            )
        replies = await pipe.execute()
    out = []
    for (run_id, instrument, evaluator, _repeat), reply in zip(asks, replies, strict=True):
        number, held, new = int(reply[0]), text(reply[1]), bool(int(reply[2]))
        job = job_prefix(run_id, instrument, evaluator) + str(number)
        if held.startswith("job:"):  # (a rating asked again has a job id of its own)
            job = held.removeprefix("job:")
        entry = held.removeprefix("entry:") if held.startswith("entry:") else None
        out.append(Claim(number, job, new, entry))
    return out


async def record(
    redis: aioredis.Redis,
    event: AssessmentEvent,
    key: RatingKey,
    durability: Durability = NO_WAIT,
) -> Recorded:
    """Write ``event`` to its run's assessment stream unless ``key`` is recorded already
    (then nothing is written and the earlier entry is returned); with ``durability``,
    return only once that many replicas hold it (else ``ReplicasBehind``)."""
    if isinstance(event, AssessmentRead) or getattr(event, "reading", None) is not None:
        raise ValueError("a person's reading is added with add_reading, never in a rating")
    fields: list[bytes | str] = []
    for name, value in assessment_to_fields(event).items():
        fields += [name, value]
    async with redis.pipeline(transaction=False) as pipe:
        pipe.eval(
            RECORD_SCRIPT,
            2,
            run_assessment_index_key(event.run_id),
            run_assessments_key(event.run_id),
            key.field,
            *fields,
        )
        if durability.waits:
            durability.queue_wait(pipe)
        reply, *waited = await pipe.execute()
    for acknowledged in waited:
        durability.check(acknowledged)
    return Recorded(text(reply[1]), bool(int(reply[0])))


RECLAIM_SCRIPT = """
if redis.call('HGET', KEYS[1], ARGV[1]) == 'entry:' .. ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], 'job:' .. ARGV[3])
  return 1
end
return 0
"""
"""Claim a recorded rating again (KEYS[1] the run's index; ARGV: the field, the entry
it must still name, the new job id). Returns 1 when claimed now."""


async def reclaim(
    redis: aioredis.Redis, run_id: str, key: RatingKey, entry_id: str, job: str
) -> bool:
    """Claim the rating ``key``, recorded as ``entry_id`` (a transient failure), again
    for ``job``; False when the field no longer names that entry (asked again already)."""
    claimed = await redis.eval(
        RECLAIM_SCRIPT, 1, run_assessment_index_key(run_id), key.field, entry_id, job
    )
    return bool(int(claimed))


async def records_at(
    redis: aioredis.Redis, where: Sequence[tuple[str, str]]
) -> list[AssessmentEvent | None]:
    """The record at each (run, stream entry id), None where there is none (one round
    trip)."""
    async with redis.pipeline(transaction=False) as pipe:
        for run_id, entry_id in where:
            pipe.xrange(run_assessments_key(run_id), min=entry_id, max=entry_id)
        replies = await pipe.execute()
    out: list[AssessmentEvent | None] = []
    for (run_id, entry_id), reply in zip(where, replies, strict=True):
        found = None
        for _id, fields in entries(reply):
            raw = fields.get(EVENT_FIELD.encode())
            if raw is not None:
                where_ = f"{run_assessments_key(run_id)} {entry_id}"
                found = assessment_from_json(raw, where=where_)
        out.append(found)
    return out


async def add_reading(redis: aioredis.Redis, reading: AssessmentRead) -> str:
    """Append a person's reading to its run's assessment stream; its entry id."""
    entry = await redis.xadd(run_assessments_key(reading.run_id), assessment_to_fields(reading))  # type: ignore[arg-type]
    return text(entry)


async def index(redis: aioredis.Redis, run_id: str) -> dict[RatingKey, str]:
    """Every rating of the run claimed or recorded: key -> ``job:ID`` or ``entry:ID``."""
    out: dict[RatingKey, str] = {}
    for field, value in text_map(await redis.hgetall(run_assessment_index_key(run_id))).items():
        key = parse_index_field(field)
        if key is not None:
            out[key] = value
    return out


async def release_claim(redis: aioredis.Redis, run_id: str, key: RatingKey) -> bool:
    """Forget a claim that no job will answer (its enqueue failed); a recorded rating
    is never released. True when a claim was removed."""
    script = """
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held and string.sub(held, 1, 4) == 'job:' then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""
    removed = await redis.eval(script, 1, run_assessment_index_key(run_id), key.field)
    return bool(removed)


async def redis_records(
    redis: aioredis.Redis, run_ids: Sequence[str]
) -> list[list[AssessmentEvent]]:
    """Each run's records in its Redis stream, in order (one pipelined round trip)."""
    keys = [run_assessments_key(run_id) for run_id in run_ids]
    return await stream_records(redis, keys, assessment_from_json)


T = TypeVar("T")


async def stream_records(
    redis: aioredis.Redis, keys: Sequence[str], decode: Callable[..., T]
) -> list[list[T]]:
    """Each stream's records, decoded from their event field by ``decode(raw,
    where=...)``, in order (one pipelined round trip): the assessment records', and
    the query records' beside a run (``contreact_bus.queries``)."""
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.xrange(key, min="-", max="+")
        replies = await pipe.execute()
    out: list[list[T]] = []
    for key, reply in zip(keys, replies, strict=True):
        records = []
        for entry_id, fields in entries(reply):
            raw = fields.get(EVENT_FIELD.encode())
            if raw is None:
                raise CorruptEvent(f"{key} {text(entry_id)}: no '{EVENT_FIELD}' field")
            records.append(decode(raw, where=f"{key} {text(entry_id)}"))
        out.append(records)
    return out


# --- the archive ------------------------------------------------------------------------


def archive_path(archive_dir: Path, run_id: str) -> Path:
    return archive_dir / f"{run_id}{ARCHIVE_SUFFIX}"


def read_archive(
    archive_dir: Path, run_id: str, skipped: dict[str, str] | None = None
) -> list[AssessmentEvent]:
    """The run's archived records in the order they were appended (none: empty). A
    line that is not a record raises ``CorruptEvent``; with ``skipped``, it is left out
    and named there instead (``RUN.assessments.jsonl:LINE`` -> why)."""
    path = archive_path(archive_dir, run_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            records.append(assessment_from_json(line, where=where))
        except CorruptEvent as exc:
            if skipped is None:
                raise
            skipped[f"{path.name}:{number}"] = str(exc).removeprefix(f"{where}: ")
    return records


def append_archive(archive_dir: Path, run_id: str, events: Iterable[AssessmentEvent]) -> int:
    """Append to the run's archive each record it lacks (by event id), under an
    exclusive lock, then flush and fsync. Never rewrites a line. Returns lines added."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_path(archive_dir, run_id)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd), "rb") as current:
            held = {_event_id(line) for line in current if line.strip()}
        lines = b""
        for event in events:
            if event.event_id not in held:
                held.add(event.event_id)
                lines += assessment_to_json(event) + b"\n"
        if lines:
            os.write(fd, lines)
            os.fsync(fd)
        added = lines.count(b"\n")
    finally:
        os.close(fd)  # (closing releases the lock)
    if created:
        _fsync_dir(archive_dir)
    return added


def _event_id(line: bytes) -> str:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return ""
    return str(data.get("event_id", "")) if isinstance(data, dict) else ""


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- the shared reader ------------------------------------------------------------------


async def read_assessments(
    redis: aioredis.Redis | None,
    archive_dir: Path,
    run_ids: Sequence[str],
    skipped: dict[str, str] | None = None,
) -> dict[str, list[AssessmentEvent]]:
    """Every assessment record of each run: the archive's, then those only Redis holds
    yet (a record is in both once archived; each appears once, by event id). ``redis``
    None: the archive alone. What the CLI, the dashboard and the analysis read.
    ``skipped``: an archive's unreadable lines are left out and named there (the
    dashboard's way) instead of raising ``CorruptEvent``."""
    in_redis = await redis_records(redis, run_ids) if redis is not None else [[] for _ in run_ids]
    out: dict[str, list[AssessmentEvent]] = {}
    for run_id, live in zip(run_ids, in_redis, strict=True):
        records = read_archive(archive_dir, run_id, skipped)
        seen = {event.event_id for event in records}
        records += [event for event in live if event.event_id not in seen]
        out[run_id] = records
    return out
