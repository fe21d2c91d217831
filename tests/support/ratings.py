"""Assessment records for the dashboard's tests, as the assessor writes them: the
fields every record of a run, evaluator, instrument and repeat carries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

TS = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def record_fields(
    run_id: str, evaluator: str, instrument: str = "pei", repeat: int = 1, *, ts: datetime = TS
) -> dict[str, Any]:
    """The fields of a ``RunAssessed`` or ``AssessmentFailed`` but its outcome."""
    return {
        "event_id": f"{run_id}|{evaluator}|{instrument}|{repeat}",
        "run_id": run_id,
        "ts": ts,
        "correlation_id": run_id,
        "instrument": instrument,
        "instrument_version": "1",
        "instrument_sha256": "a" * 64,
        "evaluator": evaluator,
        "repeat": repeat,
        "input_sha256": "b" * 64,
        "run_digest": "c" * 64,
        "run_events": 10,
        "job_id": f"job|{run_id}|{evaluator}|{instrument}|{repeat}",
    }
