"""``contreact assess read RECORD --level N|--label KEY --by NAME [--note TEXT]``: a
person's reading of a rating's answer.

RECORD is a rating's record id (``assess status --json`` lists them as
``record_id``; the dashboard's assessments page shows them). The reading is a record of
its own (``AssessmentRead``), appended to the run's assessment stream and its archive;
the rating's record never changes. The matrix, the dashboard and the exports use the
latest reading of a rating and show who read it and when. Part of the ``assess``
group (``assess.py`` hands ``read`` over).
"""

from __future__ import annotations

import argparse
import asyncio
import unicodedata
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus import assessments
from contreact_bus.archive import archived_run_ids
from contreact_bus.runs import list_runs
from contreact_cli.connection import optional_redis
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog.assessment import AssessmentEvent, AssessmentRead, RunAssessed
from contreact_events.instruments import Instrument, load_instrument


def cmd_read(args: argparse.Namespace, words: list[str], settings: CLISettings) -> int:
    if len(words) != 1:
        raise CLIError("assess read: name one record (its id: `contreact assess status --json`)")
    record_id = words[0]
    if not reader_ok(args.by):
        raise CLIError("assess read: say who reads it, in one line (--by NAME)")
    reading = asyncio.run(_read(args, settings, record_id))
    if args.json:
        print_json(reading.model_dump(mode="json"))
        return 0
    shown = reading.value if reading.value is not None else reading.label
    out(
        f"{safe(record_id, 100, one_line=True)}: read as {safe(str(shown), 60, one_line=True)} "
        f"by {safe(reading.by, 60, one_line=True)} (the rating's record is unchanged)"
    )
    return 0


async def _read(args: argparse.Namespace, settings: CLISettings, record_id: str) -> AssessmentRead:
    redis = await optional_redis(settings)
    try:
        record = await find_record(redis, settings.archive_dir, record_id, args.more_runs)
        reading = reading_of(record, args)
        if redis is not None:
            await assessments.add_reading(redis, reading)
        await asyncio.to_thread(
            assessments.append_archive, settings.archive_dir, reading.run_id, [reading]
        )
        return reading
    finally:
        if redis is not None:
            await redis.aclose()


async def find_record(
    redis: aioredis.Redis | None, archive_dir: Path, record_id: str, runs: list[str]
) -> RunAssessed:
    """The rating whose record id is ``record_id``, among ``runs`` (none given: every
    run whose id the record id names, in Redis and the archive)."""
    candidates = list(runs)
    if not candidates:
        known = set(archived_run_ids(archive_dir))
        known |= {p.name.removesuffix(assessments.ARCHIVE_SUFFIX) for p in _archived(archive_dir)}
        if redis is not None:
            known |= {row.run_id for row in await list_runs(redis)}
        candidates = sorted(r for r in known if record_id.startswith(_job_head(r)))
    found: AssessmentEvent | None = None
    records = await assessments.read_assessments(redis, archive_dir, candidates)
    for run_records in records.values():
        found = next((r for r in run_records if r.event_id == record_id), found)
    shown = safe(record_id, 100, one_line=True)
    if found is None:
        raise CLIError(
            f"no assessment record {shown} (`contreact assess status RUN --json` lists the "
            "record ids; name the run with --run RUN if its id is unusual)"
        )
    if isinstance(found, AssessmentRead):
        raise CLIError(f"{shown} is a person's reading, not a rating: name the rating's record")
    if not isinstance(found, RunAssessed):
        raise CLIError(
            f"{shown} is a failed rating: it has no answer to read (a transient failure is "
            "asked again by the next `contreact assess`)"
        )
    return found


def reader_ok(name: str | None) -> bool:
    """A reader's name: one line of printable text, at most 200 characters."""
    if name is None or not name.strip() or len(name) > 200:
        return False
    return not any(unicodedata.category(char)[0] == "C" for char in name)


def _archived(archive_dir: Path) -> list[Path]:
    return sorted(archive_dir.glob(f"*{assessments.ARCHIVE_SUFFIX}"))


def _job_head(run_id: str) -> str:
    """How the record ids of a run's ratings begin (``store.job_prefix``)."""
    return f"assess-{run_id.replace('.', '_')}-"


def reading_of(record: RunAssessed, args: argparse.Namespace) -> AssessmentRead:
    """The reading asked for, checked against the record's instrument."""
    instrument = load_instrument(record.instrument)
    value, label = _checked(instrument, args.level, args.label)
    return AssessmentRead(
        event_id=f"read-{uuid.uuid4().hex}",
        run_id=record.run_id,
        ts=datetime.now(UTC),
        causation_id=record.event_id,
        correlation_id=record.run_id,
        record_id=record.event_id,
        instrument=record.instrument,
        evaluator=record.evaluator,
        repeat=record.repeat,
        value=value,
        label=label,
        by=args.by,
        note=args.note or "",
    )


def _checked(
    instrument: Instrument, level: int | None, label: str | None
) -> tuple[int | None, str | None]:
    if instrument.kind == "scale":
        if label is not None or level is None:
            raise CLIError(
                f"assess read: a {instrument.name} rating is a level: give --level "
                f"{instrument.scale_min}-{instrument.scale_max}"
            )
        if not instrument.scale_min <= level <= instrument.scale_max:
            raise CLIError(
                f"--level {level} is off the {instrument.name} scale: give a level from "
                f"{instrument.scale_min} to {instrument.scale_max}"
            )
        return level, None
    keys = [item.key for item in instrument.labels]
    if level is not None or label is None:
        raise CLIError(
            f"assess read: a {instrument.name} rating is a label: give --label ({', '.join(keys)})"
        )
    if label not in keys:
        raise CLIError(
            f"--label {safe(label, 60, one_line=True)}: the {instrument.name} rubric has no "
            f"such label (its labels: {', '.join(keys)})"
        )
    return None, label
