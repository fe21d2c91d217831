"""The records a rating ends as: ``RunAssessed`` (an answer came back, whatever the
parser, or the follow-up, made of it) or ``AssessmentFailed`` (none did). The event id
is the job id: one rating, one record, and the archive appends each id once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from contreact_bus.assessments.evaluators import Rating
from contreact_events.catalog.assessment import (
    AnswerStatus,
    AssessmentFailed,
    FollowUp,
    ReadBy,
    RunAssessed,
)
from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.history.evaluation import EvaluatorInput
from contreact_events.instruments import Instrument, ParsedAnswer


@dataclass(frozen=True)
class Answer:
    """The evaluator's answer to the rating call, as the worker reported it."""

    message: AssistantMessage
    usage: LLMUsage
    model_ran: str
    model_digest: str | None = None


@dataclass(frozen=True)
class Reading:
    """What the record states: the parser's reading, or the follow-up's."""

    status: AnswerStatus
    value: int | None
    label: str | None
    read_by: ReadBy
    follow_up: FollowUp | None = None


def parser_reading(parsed: ParsedAnswer) -> Reading:
    return Reading(parsed.status, parsed.value, parsed.label, "parser")


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
        "options": ev.options_for(rating.repeat),
        "repeat": rating.repeat,
        "job_id": rating.job_id,
        "requested_by": rating.requested_by,
        "forced": rating.forced,
        "retry_of": rating.retry_of,
    }


def assessed_event(
    rating: Rating,
    instrument: Instrument,
    made: EvaluatorInput,
    *,
    answer: Answer,
    parsed: ParsedAnswer,
    reading: Reading,
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
            "history_seen": made.history_seen,
            "evaluator_model_ran": answer.model_ran,
            "evaluator_model_digest": answer.model_digest,
            "backend": rating.evaluator.backend,
            "host": host,
            "raw_answer": answer.message.content,
            "raw_thinking": answer.message.thinking or None,
            "status": reading.status,
            "value": reading.value,
            "label": reading.label,
            "reason": parsed.reason,
            "parse_note": parsed.note,
            "usage": answer.usage,
            "attempts": attempts,
            "read_by": reading.read_by,
            "follow_up": reading.follow_up,
        }
    )


def failed_event(
    rating: Rating,
    error: str,
    *,
    attempts: int,
    transient: bool = False,
    instrument: Instrument | None = None,
    made: EvaluatorInput | None = None,
) -> AssessmentFailed:
    """No answer. What was rated is pinned when the input could be built; else the
    hashes are empty and ``run_events`` is 0 (``verify`` has nothing to check).
    ``transient``: the next ``contreact assess`` asks again."""
    return AssessmentFailed.model_validate(
        {
            **_envelope(rating),
            "instrument_version": instrument.version if instrument else "",
            "instrument_sha256": instrument.text_sha256 if instrument else "",
            "input_sha256": made.input_sha256 if made else "",
            "run_digest": made.run_digest if made else "",
            "run_events": made.run_events if made else 0,
            "state_shape": made.state_shape if made else "",
            "history_seen": made.history_seen if made else "whole",
            "error": " ".join(error.split())[:2000],
            "attempts": attempts,
            "backend": rating.evaluator.backend,
            "host": rating.evaluator.host,
            "transient": transient,
        }
    )
