"""Assessment events: an evaluator model rated a finished run with an instrument.

They are not run-log events. A finished run's log, digest and archive never change;
its assessments live in a stream of their own (``run:{RUN}:assessments``) and an
append-only archive beside the run's, and form their own union here
(``AssessmentEvent``), with their own schema versions and upcasters. Each record pins
what was rated (the run's digest and log position), with what (the instrument and its
text hash), by whom (the evaluator, its options, where it ran), and the hash of the
exact evaluator input, so ``contreact assess verify`` can rebuild the input from the
log and compare (``history/evaluation.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import Field, TypeAdapter

from contreact_events.catalog.chat import LLMUsage
from contreact_events.catalog.envelope import EventBase

AnswerStatus = Literal["rated", "unparseable", "refused", "off_scale"]
"""What the parser made of an answer: a rating (a level, or a label), or why not."""


class AssessmentBase(EventBase):
    """What every assessment record holds. ``run_id`` and ``correlation_id`` are the
    rated run; ``causation_id`` is the job that asked for the rating; ``ts`` is when the
    record was written (UTC)."""

    instrument: str
    """The instrument's name (``pei``, ``patterns``)."""
    instrument_version: str
    instrument_sha256: str
    """SHA-256 of the instrument's prompt text, as asked."""
    evaluator: str
    """The model asked to rate (as named on the command line)."""
    options: dict[str, Any] = {}
    """The evaluator's generation options as sent (temperature, seed, num_predict...)."""
    repeat: int = Field(ge=1)
    """Which repeat of (run, evaluator, instrument) this is, from 1; a forced
    re-assessment is a new repeat."""
    input_sha256: str
    """SHA-256 of the exact evaluator input (``prompt.sha256_of_prompt`` over its
    messages, no tools): what ``assess verify`` recomputes from the log."""
    run_digest: str
    """The state digest (``AgentState.digest``) of the rated log prefix."""
    run_events: int = Field(ge=0)
    """How many events of the run's log were rated (the log position); 0 only in an
    ``AssessmentFailed`` whose input could not be built (then ``input_sha256`` and
    ``run_digest`` are empty too)."""
    state_shape: str = ""
    """``AgentState.shape()`` of the code that made ``run_digest``: digests compare
    only between equal shapes."""
    job_id: str
    """The job that asked (one per run, evaluator, instrument, repeat)."""
    requested_by: str = "cli"
    forced: bool = False
    """True when the rating was asked for again although one was recorded."""


class RunAssessed(AssessmentBase):
    """An evaluator answered; the answer and what the parser made of it. An answer
    that is not a rating (unparseable, a refusal, a number off the scale) is recorded
    here too, with its raw text: it was an answer, never a guess."""

    type: Literal["RunAssessed"] = "RunAssessed"
    run_events: int = Field(ge=1)
    """How many events of the run's log were rated (the log position)."""
    evaluator_model_ran: str = ""
    """The model that answered, as the backend reports it (a resolved tag or file)."""
    evaluator_model_digest: str | None = None
    backend: str = ""
    """The backend that ran the call (``ollama``, ``openai``, ``embedded``, ``scripted``)."""
    host: str | None = None
    """The host that ran the call, where the backend has one."""
    raw_answer: str
    """The evaluator's answer, untouched (untrusted text: escape it when shown)."""
    raw_thinking: str | None = None
    """The evaluator's reasoning, when the backend gives it apart from the answer."""
    status: AnswerStatus
    value: int | None = None
    """The level stated (scale instruments), when ``status`` is ``rated``."""
    label: str | None = None
    """The label's key (label instruments), when ``status`` is ``rated``."""
    reason: str | None = None
    """The answer's one-sentence reason (label instruments), when it gave one."""
    parse_note: str = ""
    """Why the parser decided as it did (what it read, or what was missing)."""
    usage: LLMUsage = LLMUsage()
    """Tokens (prompt, completion) and durations (load, call, total, wall) of the call."""
    attempts: int = 1
    """Calls made for this answer, retries included."""


class AssessmentFailed(AssessmentBase):
    """No answer came back after the retries, or the job could not ask (the run cannot
    be assessed, the instrument is unknown): it ends as a visible failure. What was to
    be rated is pinned when the input was built; otherwise ``input_sha256`` and
    ``run_digest`` are empty and ``run_events`` is 0."""

    type: Literal["AssessmentFailed"] = "AssessmentFailed"
    error: str
    """What went wrong, in one line, and the fix where there is one."""
    attempts: int = 1
    backend: str = ""
    host: str | None = None


AssessmentEvent: TypeAlias = Annotated[
    RunAssessed | AssessmentFailed,
    Field(discriminator="type"),
]

ASSESSMENT_ADAPTER: TypeAdapter[AssessmentEvent] = TypeAdapter(AssessmentEvent)

ASSESSMENT_EVENT_CLASSES: dict[str, type[AssessmentBase]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(AssessmentEvent)[0])
}
"""Every assessment event class by its ``type`` tag, derived from the union."""

ASSESSMENT_SCHEMA_VERSIONS: dict[str, int] = {
    name: int(cls.model_fields["schema_version"].default)
    for name, cls in ASSESSMENT_EVENT_CLASSES.items()
}
"""The current shape version of every assessment event type (all 1 so far)."""

ASSESSMENT_UPCASTERS: Mapping[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}
"""(event type, stored version) -> function returning the data at version + 1, as for
the run log's ``UPCASTERS``. Register one whenever a ``schema_version`` is raised."""
