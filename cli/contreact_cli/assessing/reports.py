"""What `contreact assess` prints and writes: the fate of enqueued ratings, the status
of each rating (its record, else its rq job), the export (the records as stored,
and seed 003's ``pei_results.jsonl``), and the verification of recorded inputs.

Evaluator answers are untrusted text: printed through ``text.safe`` (one line, no
control sequences, bounded), written to files as JSON strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import redis

from contreact_assessor.queueing import Placed, job_state, queue
from contreact_bus import assessments
from contreact_bus.experiments import replica_entries
from contreact_bus.runs import list_runs
from contreact_cli.assessing.targets import RatedRun
from contreact_cli.connection import redis_client
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog.assessment import AssessmentEvent, AssessmentFailed, RunAssessed
from contreact_events.history.evaluation import verify_assessment
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
        "done": "rated before (--force adds new repeats)",
        "pending": "queued or running already",
    }
    parts = [f"{n} {wording[fate]}" for fate, n in counts.items()]
    lines = [f"{len(placed)} rating(s): {', '.join(parts) or 'none'}"]
    if counts.get("enqueued") or counts.get("requeued"):
        lines.append(
            "follow them with `contreact assess status RUN` (an assessor must run: `contreact up`)"
        )
    return lines


def outcome(record: AssessmentEvent) -> str:
    """A record in a few words: ``rated 6``, ``rated systematic_production``,
    ``unparseable``, ``refused``, ``off_scale``, ``failed: ...``."""
    if isinstance(record, AssessmentFailed):
        return f"failed: {safe(record.error, 120, one_line=True)}"
    if record.status == "rated":
        shown = record.value if record.value is not None else record.label
        return f"rated {safe(str(shown), 60, one_line=True)}"
    return record.status


async def status_rows(
    settings: CLISettings, run_ids: Sequence[str], experiment: str | None
) -> list[dict[str, Any]]:
    """One row per rating claimed or recorded: its record's outcome, else its job's state."""
    async with redis_client(settings) as client:
        ids = list(run_ids)
        if experiment:
            ids += [
                e.run_id for _, e in sorted((await replica_entries(client, experiment)).items())
            ]
        if not ids:
            ids = [row.run_id for row in await list_runs(client)]
        records = await assessments.read_assessments(client, settings.archive_dir, ids)
        indexes = {run: await assessments.index(client, run) for run in ids}
    connection = redis.Redis.from_url(settings.resolved_rq_redis_url())
    rq_queue = queue(connection)
    rows = []
    try:
        for run in ids:
            done = assessments.by_key(records[run])
            keys = sorted(
                set(indexes[run]) | set(done), key=lambda k: (k.instrument, k.evaluator, k.repeat)
            )
            for key in keys:
                record = done.get(key)
                held = indexes[run].get(key, "")
                job = assessments.job_id(run, key)
                rows.append(
                    {
                        "run_id": run,
                        "instrument": key.instrument,
                        "evaluator": key.evaluator,
                        "repeat": key.repeat,
                        "state": outcome(record) if record else f"job {job_state(rq_queue, job)}",
                        "job_id": job,
                        "recorded": record is not None or held.startswith("entry:"),
                    }
                )
    finally:
        connection.close()
    return rows


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
    lines.append(f"{done} of {len(rows)} rating(s) recorded")
    return lines


def pei_result(record: RunAssessed, history_model: str) -> dict[str, Any]:
    """A PEI rating as a line of seed 003's ``pei_results.jsonl``."""
    return {
        "run_id": record.run_id,
        "model": history_model,
        "evaluator": record.evaluator,
        "repeat": record.repeat,
        "pei_rating": record.value if record.status == "rated" else None,
        "status": record.status,
        "raw_response": record.raw_answer,
        "temperature": record.options.get("temperature"),
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
        for record in mine:
            if isinstance(record, RunAssessed) and record.instrument == "pei":
                pei_lines.append(orjson.dumps(pei_result(record, run.label)) + b"\n")
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
        for record in records.get(run.run_id, []):
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
