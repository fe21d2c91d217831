"""The records a rating ends as: ``RunAssessed`` (an answer came back, whatever the
parser made of it) or ``AssessmentFailed`` (none did). The event id is the job id:
one rating, one record, and the archive appends each id once."""

from __future__ import annotations

from datetime import UTC, datetime

from contreact_assessor.evaluators import Rating
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_events.catalog.chat import LLMUsage
from contreact_events.history.evaluation import EvaluatorInput
from contreact_events.instruments import Instrument, ParsedAnswer


def _envelope(rating: Rating) -> dict[str, object]:
    ev = rating.evaluator
    return {
        "event_id": rating.job_id,
        "run_id": rating.run_id,
        "ts": datetime.now(UTC),
        "causation_id": rating.job_id,
        "correlation_id": rating.run_id,
        "instrument": rating.instrument,
        "evaluator": ev.model,
        "options": dict(ev.options),
        "repeat": rating.repeat,
        "job_id": rating.job_id,
        "requested_by": rating.requested_by,
        "forced": rating.forced,
    }


def assessed_event(
    rating: Rating,
    instrument: Instrument,
    made: EvaluatorInput,
    *,
    raw: str,
    parsed: ParsedAnswer,
    usage: LLMUsage,
    model_ran: str,
    host: str | None,
    attempts: int,
) -> RunAssessed:
    return RunAssessed.model_validate(
        {
            **_envelope(rating),
            "instrument_version": instrument.version,
            "instrument_sha256": instrument.text_sha256,
            "input_sha256": made.input_sha256,
            "run_digest": made.run_digest,
            "run_events": made.run_events,
            "state_shape": made.state_shape,
            "evaluator_model_ran": model_ran,
            "backend": rating.evaluator.backend,
            "host": host,
            "raw_answer": raw,
            "status": parsed.status,
            "value": parsed.value,
            "label": parsed.label,
            "reason": parsed.reason,
            "parse_note": parsed.note,
            "usage": usage,
            "attempts": attempts,
        }
    )


def failed_event(
    rating: Rating,
    error: str,
    *,
    attempts: int,
    instrument: Instrument | None = None,
    made: EvaluatorInput | None = None,
) -> AssessmentFailed:
    """No answer. What was rated is pinned when the input could be built; else the
    hashes are empty and ``run_events`` is 0 (``verify`` has nothing to check)."""
    return AssessmentFailed.model_validate(
        {
            **_envelope(rating),
            "instrument_version": instrument.version if instrument else "",
            "instrument_sha256": instrument.text_sha256 if instrument else "",
            "input_sha256": made.input_sha256 if made else "",
            "run_digest": made.run_digest if made else "",
            "run_events": made.run_events if made else 0,
            "state_shape": made.state_shape if made else "",
            "error": " ".join(error.split())[:2000],
            "attempts": attempts,
            "backend": rating.evaluator.backend,
            "host": rating.evaluator.host,
        }
    )
