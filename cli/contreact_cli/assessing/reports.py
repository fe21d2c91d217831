"""What `contreact assess` prints and writes: the fate of enqueued ratings, the status
of each rating (its record in force, else its rq job), the export (the records as
stored, and seed 003's ``pei_results.jsonl``: every PEI rating once, failed ones with
a null rating, each with its reading in force), and the verification of recorded
inputs (and that each person's reading reads a rating of its run).

Evaluator answers are untrusted text: printed through ``text.safe`` (one line, no
control sequences, bounded), written to files as JSON strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import redis.asyncio as aioredis

from contreact_bus import assessments
from contreact_bus.archive import archive_path, archived_experiment, archived_run_ids
from contreact_bus.assessments.queueing import Placed, job_state, queue
from contreact_bus.experiments import replica_entries
from contreact_bus.runs import list_runs
from contreact_cli.assessing.targets import RatedRun
from contreact_cli.connection import optional_redis, rq_connection
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog.assessment import (
    AssessmentEvent,
    AssessmentFailed,
    AssessmentRead,
    RunAssessed,
)
from contreact_events.history.evaluation import verify_assessment
from contreact_events.names import RUNS_INDEX
from contreact_events.wire.codec import assessment_to_json

PEI_RESULTS = "pei_results.jsonl"
"""Seed 003's file name for PEI ratings (one JSON object per line)."""


def placed_lines(placed: Sequence[Placed]) -> list[str]:
    counts: dict[str, int] = {}
    for p in placed:
        counts[p.fate] = counts.get(p.fate, 0) + 1
    wording = {
        "enqueued": "enqueued",
        "requeued": "enqueued again (their job was lost)",
        "retried": "asked again (their last try failed for a transient reason)",
        "done": "rated before (--force adds new repeats)",
        "pending": "queued or running already",
    }
    parts = [f"{n} {wording[fate]}" for fate, n in counts.items()]
    lines = [f"{len(placed)} rating(s): {', '.join(parts) or 'none'}"]
    if counts.get("enqueued") or counts.get("requeued") or counts.get("retried"):
        lines.append(
            "follow them with `contreact assess status RUN` (an assessor must run: `contreact up`)"
        )
    return lines


def outcome(record: AssessmentEvent) -> str:
    """A record in a few words: ``rated 6``, ``rated 6 (follow-up)``, ``rated 5 (read
    by NAME)``, ``rated systematic_production``, ``unparseable``, ``failed: ...``."""
    if isinstance(record, AssessmentFailed):
        again = " (asked again by the next `assess`)" if record.transient else ""
        return f"failed: {safe(record.error, 120, one_line=True)}{again}"
    if isinstance(record, AssessmentRead):
        return "a reading"
    said: str = record.status
    if record.status == "rated":
        shown = record.value if record.value is not None else record.label
        said = f"rated {safe(str(shown), 60, one_line=True)}"
    if record.reading is not None:
        return f"{said} (read by {safe(record.reading.by, 40, one_line=True)})"
    return f"{said} (follow-up)" if record.read_by == "follow_up" else said


async def status_rows(
    settings: CLISettings, run_ids: Sequence[str], experiment: str | None
) -> list[dict[str, Any]]:
    """One row per rating claimed or recorded: its record in force, else its job's
    state. Without Redis, the archived records alone (job states unknown). A run named
    that neither Redis nor the archive holds is refused."""
    client = await optional_redis(settings)
    try:
        ids = await _status_runs(client, settings, run_ids, experiment)
        records = await assessments.read_assessments(client, settings.archive_dir, ids)
        indexes = {run: await assessments.index(client, run) for run in ids} if client else {}
    finally:
        if client is not None:
            await client.aclose()
    rows = []
    connection = rq_connection(settings) if client else None
    try:
        for run in ids:
            held = indexes.get(run, {})
            done = assessments.by_key(records[run])
            keys = sorted(
                set(held) | set(done), key=lambda k: (k.instrument, k.evaluator, k.repeat)
            )
            for key in keys:
                record = done.get(key)
                value = held.get(key, "")
                job = value.removeprefix("job:") if value.startswith("job:") else None
                job = job or assessments.job_id(run, key)
                state = outcome(record) if record is not None else "job unknown (no Redis)"
                if connection is not None and (record is None or value.startswith("job:")):
                    state = f"job {job_state(queue(connection), job)}"  # (asked again)
                rows.append(
                    {
                        "run_id": run,
                        "instrument": key.instrument,
                        "evaluator": key.evaluator,
                        "repeat": key.repeat,
                        "state": state,
                        "job_id": job,
                        "record_id": record.event_id if record is not None else None,
                        "read_by": getattr(record, "read_by", None),
                        "recorded": record is not None,
                    }
                )
    finally:
        if connection is not None:
            connection.close()
    return rows


async def _status_runs(
    client: aioredis.Redis | None,
    settings: CLISettings,
    run_ids: Sequence[str],
    experiment: str | None,
) -> list[str]:
    """The runs to show: those named (each must exist), the experiment's (from Redis,
    else its archives), else every run."""
    archive = settings.archive_dir
    ids = list(dict.fromkeys(run_ids))
    for run in ids:
        listed = client is not None and await client.zscore(RUNS_INDEX, run) is not None
        archived = (
            archive_path(archive, run).exists() or assessments.archive_path(archive, run).exists()
        )
        if not (listed or archived):
            where = f"Redis or {archive}" if client is not None else f"{archive} (Redis is not up)"
            raise CLIError(
                f"no run {safe(run, 80, one_line=True)} in {where} (`contreact runs` lists them)"
            )
    if experiment:
        entries = await replica_entries(client, experiment) if client is not None else {}
        found = [e.run_id for _, e in sorted(entries.items())]
        found = found or archived_experiment(archive, experiment)
        if not found:
            raise CLIError(
                f"no experiment '{experiment}' in Redis or in the archives of {archive} "
                "(`contreact experiment status NAME`)"
            )
        ids += [run for run in found if run not in ids]
    if not ids and not run_ids and not experiment:
        if client is not None:
            ids = [row.run_id for row in await list_runs(client)]
        ids = list(dict.fromkeys([*ids, *archived_run_ids(archive)]))
    return ids


def status_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    if not rows:
        return ["no ratings claimed or recorded (`contreact assess RUN --evaluator MODEL`)"]
    lines = [f"{'run':<28} {'instrument':<10} {'evaluator':<28} {'rep':>3}  state"]
    for row in rows:
        lines.append(
            f"{safe(row['run_id'], 28, one_line=True):<28} {row['instrument']:<10} "
            f"{safe(row['evaluator'], 28, one_line=True):<28} {row['repeat']:>3}  {row['state']}"
        )
    done = sum(1 for row in rows if row["recorded"])
    lines.append(f"{done} of {len(rows)} rating(s) recorded (record ids: --json)")
    return lines


def pei_result(record: RunAssessed | AssessmentFailed, history_model: str) -> dict[str, Any]:
    """A PEI rating as a line of seed 003's ``pei_results.jsonl`` (a failed one: status
    ``failed``, a null rating and response), with who read it."""
    answer = record if isinstance(record, RunAssessed) else None
    reading = answer.reading if answer is not None else None
    return {
        "run_id": record.run_id,
        "model": history_model,
        "evaluator": record.evaluator,
        "repeat": record.repeat,
        "pei_rating": answer.value if answer is not None and answer.status == "rated" else None,
        "status": answer.status if answer is not None else "failed",
        "raw_response": answer.raw_answer if answer is not None else None,
        "error": record.error if isinstance(record, AssessmentFailed) else None,
        "read_by": answer.read_by if answer is not None else None,
        "read_by_name": reading.by if reading is not None else None,
        "read_at": reading.at.isoformat() if reading is not None else None,
        "temperature": record.options.get("temperature"),
        "seed": record.options.get("seed"),
        "input_sha256": record.input_sha256,
        "run_digest": record.run_digest,
        "instrument_sha256": record.instrument_sha256,
        "timestamp": record.ts.isoformat(),
    }


def export(
    runs: Sequence[RatedRun], records: Mapping[str, Sequence[AssessmentEvent]], folder: Path
) -> int:
    """``RUN.assessments.jsonl`` per run (the records as stored) and ``pei_results.jsonl``
    (every PEI rating of the runs). Returns the records written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    pei_lines: list[bytes] = []
    for run in runs:
        mine = records.get(run.run_id, [])
        body = b"".join(assessment_to_json(r) + b"\n" for r in mine)
        _write(folder / f"{run.run_id}{assessments.ARCHIVE_SUFFIX}", body)
        written += len(mine)
        for rating in assessments.in_force(mine):
            if rating.instrument == "pei":
                pei_lines.append(orjson.dumps(pei_result(rating, run.label)) + b"\n")
    _write(folder / PEI_RESULTS, b"".join(pei_lines))
    return written


def _write(path: Path, body: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(body)
    tmp.replace(path)


def verify(
    runs: Sequence[RatedRun], records: Mapping[str, Sequence[AssessmentEvent]]
) -> list[dict[str, Any]]:
    """Each rating's input rebuilt from its run's log and its hash compared."""
    report = []
    for run in runs:
        mine = records.get(run.run_id, [])
        rated = {r.event_id for r in mine if isinstance(r, RunAssessed)}
        for record in mine:
            if isinstance(record, AssessmentRead):
                problem = (
                    None
                    if record.record_id in rated
                    else f"a reading of {record.record_id}, which is no rating of this run"
                )
            else:
                problem = verify_assessment(list(run.events), record)
            report.append(
                {
                    "run_id": run.run_id,
                    "instrument": record.instrument,
                    "evaluator": record.evaluator,
                    "repeat": record.repeat,
                    "ok": problem is None,
                    "problem": problem,
                }
            )
    return report


def verify_lines(report: Sequence[Mapping[str, Any]]) -> list[str]:
    if not report:
        return ["no assessment records to verify"]
    lines = []
    for row in report:
        verdict = "ok" if row["ok"] else f"MISMATCH: {safe(row['problem'], 300, one_line=True)}"
        lines.append(
            f"{safe(row['run_id'], 60, one_line=True)} {row['instrument']} "
            f"{safe(row['evaluator'], 60, one_line=True)} repeat {row['repeat']}: {verdict}"
        )
    bad = sum(1 for row in report if not row["ok"])
    lines.append(f"{len(report) - bad} of {len(report)} input(s) rebuilt to the recorded hash")
    return lines
