"""Assessment events: an evaluator model rated a finished run with an instrument.

They are not run-log events. A finished run's log, digest and archive never change;
its assessments live in a stream of their own (``run:{RUN}:assessments``) and an
append-only archive beside the run's, and form their own union here
(``AssessmentEvent``), with their own schema versions and upcasters. Each record pins
what was rated (the run's digest and log position), with what (the instrument and its
text hash), by whom (the evaluator, its options, where it ran), and the hash of the
exact evaluator input, so ``contreact assess verify`` can rebuild the input from the
log and compare (``history/evaluation.py``).

Who read a rating's level is part of the record (``read_by``): the parser, or, when
the parser found no level (or several), the evaluator's own answer to a follow-up
question asked in the same conversation with structured output (``FollowUp``), or a
person. A person's reading is a record of its own (``AssessmentRead``), appended beside
the rating it reads and never changing it; readers apply the latest one
(``contreact_bus.assessments.readings``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from contreact_events.catalog.chat import LLMUsage
from contreact_events.catalog.envelope import EventBase

AnswerStatus = Literal["rated", "unparseable", "refused", "off_scale"]
"""What the parser made of an answer: a rating (a level, or a label), or why not."""
ReadBy = Literal["parser", "follow_up", "person"]
"""Who read the level (or label) in force: the parser, the evaluator's answer to the
follow-up question, or a person (``AssessmentRead``)."""


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FollowUp(_Part):
    """The second reading of an answer the parser found no level in (or several): the
    evaluator is asked once more, in the same conversation, to state only its level as
    JSON, with the backend's structured output (Ollama's ``format``, OpenAI's
    ``response_format``). Asked only then: a clear parse is never overridden."""

    question: str
    """The follow-up turn, as sent (after the evaluator's first answer)."""
    raw_answer: str | None = None
    """The evaluator's answer, untouched (the JSON text); None when none came."""
    raw_thinking: str | None = None
    status: AnswerStatus | None = None
    """What the answer states: ``rated`` (a level or label), ``refused``, ``off_scale``
    or ``unparseable`` (no level: JSON null, or not the asked shape); None: no answer."""
    value: int | None = None
    label: str | None = None
    note: str = ""
    """What was read, or why there is no answer (a backend without structured output,
    a failed call): one line."""
    usage: LLMUsage = LLMUsage()


class PersonReading(_Part):
    """The person's reading in force on a rating, as readers show it (the view of a
    record with its latest ``AssessmentRead`` applied); never part of a stored record."""

    by: str
    at: datetime
    note: str = ""
    record_id: str
    """The ``AssessmentRead`` record."""


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
    history_seen: str = "whole"
    """Which history the evaluator saw: ``whole``, or, for a run with ``history:
    truncate | compact``, the part its own prompts carried (the summary and the messages
    after it, or the last messages). Records before version 3 saw the whole history."""
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
    schema_version: Literal[3] = 3  # type: ignore[assignment]  # a raised version
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
    """The evaluator's reasoning, when the backend gives it apart from the answer
    (Ollama's ``message.thinking``, an OpenAI-compatible ``reasoning``)."""
    status: AnswerStatus
    """The reading in force (``read_by``): the parser's, or the follow-up's when the
    parser found no level."""
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
    read_by: ReadBy = "parser"
    """Who read ``status`` and ``value``/``label``: ``parser`` or ``follow_up`` as
    recorded; ``person`` only in a view with a person's reading applied."""
    follow_up: FollowUp | None = None
    """The follow-up asked because the parser found no level (None: not asked)."""
    reading: PersonReading | None = None
    """In a view only: the person's reading applied (never stored)."""
    retry_of: str | None = None
    """The record of this rating that failed for a transient reason before (this one
    replaces it under the same repeat)."""


class AssessmentFailed(AssessmentBase):
    """No answer came back after the retries, or the job could not ask (the run cannot
    be assessed, the instrument is unknown): it ends as a visible failure. What was to
    be rated is pinned when the input was built; otherwise ``input_sha256`` and
    ``run_digest`` are empty and ``run_events`` is 0."""

    type: Literal["AssessmentFailed"] = "AssessmentFailed"
    schema_version: Literal[3] = 3  # type: ignore[assignment]  # a raised version
    error: str
    """What went wrong, in one line, and the fix where there is one."""
    attempts: int = 1
    backend: str = ""
    host: str | None = None
    transient: bool = False
    """It failed for a reason that may pass (no answer in time, a transient backend
    error, a killed worker): the next ``contreact assess`` asks again, under the same
    repeat, without ``--force``."""
    retry_of: str | None = None


class AssessmentRead(EventBase):
    """A person's reading of a rating's answer (``contreact assess read``): the level
    (or label) they read in it, who they are, why. Appended to the run's assessment
    stream beside the rating it reads (``record_id``), which never changes; the latest
    reading of a rating is the one in force."""

    type: Literal["AssessmentRead"] = "AssessmentRead"
    record_id: str
    """The event id of the ``RunAssessed`` record read."""
    instrument: str
    evaluator: str
    repeat: int = Field(ge=1)
    """The rating read (as its record names it)."""
    value: int | None = None
    """The level read (scale instruments)."""
    label: str | None = None
    """The label read (label instruments)."""
    by: str = Field(min_length=1, max_length=200)
    """Who read it (as given: ``--by NAME``)."""
    note: str = Field(default="", max_length=2000)


AssessmentEvent: TypeAlias = Annotated[
    RunAssessed | AssessmentFailed | AssessmentRead,
    Field(discriminator="type"),
]

ASSESSMENT_ADAPTER: TypeAdapter[AssessmentEvent] = TypeAdapter(AssessmentEvent)

ASSESSMENT_EVENT_CLASSES: dict[str, type[EventBase]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(AssessmentEvent)[0])
}
"""Every assessment event class by its ``type`` tag, derived from the union."""

ASSESSMENT_SCHEMA_VERSIONS: dict[str, int] = {
    name: int(cls.model_fields["schema_version"].default)
    for name, cls in ASSESSMENT_EVENT_CLASSES.items()
}
"""The current shape version of every assessment event type. ``RunAssessed`` and
``AssessmentFailed`` are at 2 since they hold who read a rating, its follow-up and a
transient failure's retry (issue 27), at 3 since they say which history the evaluator
saw (``history_seen``, issue 31): older code refuses them with "upgrade contreact"
instead of failing on a field it does not know."""


def _same_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 to 2, 2 to 3 (``history_seen``, issue 31): the fields added have
    defaults, which is how the older versions read."""
    return data


ASSESSMENT_UPCASTERS: Mapping[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("RunAssessed", 1): _same_fields,
    ("AssessmentFailed", 1): _same_fields,
    ("RunAssessed", 2): _same_fields,
    ("AssessmentFailed", 2): _same_fields,
}
"""(event type, stored version) -> function returning the data at version + 1, as for
the run log's ``UPCASTERS``. Register one whenever a ``schema_version`` is raised."""
