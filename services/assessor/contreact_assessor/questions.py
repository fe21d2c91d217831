"""What a rating job asks through the LLM worker: the evaluator model's check (its
digest), the rating call (the rated history, then the instrument's prompt), and the
follow-up, when the parser finds no level in the answer (or several).

The follow-up is asked once, in the same conversation (the history, the instrument's
prompt, the evaluator's answer, then the question), with the backend's structured
output: the answer must be JSON of the instrument's shape, ``{"level": 1..10 | null,
"refused": bool}`` for a scale, ``{"label": KEY | null, "refused": bool}`` for a rubric.
A clear parse is never asked about again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from contreact_bus.assessments.evaluators import Rating
from contreact_events.catalog.assessment import AnswerStatus
from contreact_events.catalog.chat import ChatMessage
from contreact_events.instruments import Instrument, ParsedAnswer
from contreact_events.wire.tasks import LLMTask

MAX_ANSWER_CHARS = 20_000
"""An evaluator's answer past this is cut by the worker (and says so): a rating is a
level and a sentence; the cap bounds what a runaway answer puts in Redis."""
SCHEMA_TITLE = "evaluator_level"


def needs_follow_up(parsed: ParsedAnswer) -> bool:
    """Whether the parser found no level (or label) in the answer, or several: the one
    place that decides when the follow-up is asked."""
    return parsed.status == "unparseable"


def evaluator_task(
    rating: Rating,
    messages: tuple[ChatMessage, ...],
    task_id: str,
    call_timeout_s: float | None,
    *,
    json_schema: dict[str, Any] | None = None,
) -> LLMTask:
    """A chat call of a rating's evaluator: ``messages``, no tools, answered to the job
    (``reply_to``); its deadline starts when a worker takes it (``call_timeout_s``)."""
    return _task(
        rating,
        "chat",
        task_id,
        messages=messages,
        keep_alive=rating.evaluator.keep_alive,
        call_index=rating.repeat - 1,
        max_content_chars=MAX_ANSWER_CHARS,
        call_timeout_s=call_timeout_s,
        json_schema=json_schema,
        price=rating.evaluator.price,
    )


def check_task(rating: Rating, task_id: str, deadline: datetime) -> LLMTask:
    """The evaluator model's check (is it there, which version), answered to the job."""
    return _task(rating, "check", task_id, deadline=deadline)


def _task(rating: Rating, kind: Literal["chat", "check"], task_id: str, **more: Any) -> LLMTask:
    ev = rating.evaluator
    return LLMTask(
        kind=kind,
        task_id=task_id,
        run_id=rating.run_id,
        backend=ev.backend,
        model=ev.model,
        host=ev.host,
        hosts=ev.hosts,
        api_key_env=ev.api_key_env,
        timeout_s=ev.timeout_s,
        connect_timeout_s=ev.connect_timeout_s,
        options=ev.options_for(rating.repeat),
        script=ev.script,
        reply_to=rating.job_id,
        **more,
    )


def question(instrument: Instrument) -> str:
    """The follow-up turn: state only the level (or label) as JSON."""
    if instrument.kind == "scale":
        lo, hi = instrument.scale_min, instrument.scale_max
        return (
            "Please state only the level you gave, as JSON: "
            f'{{"level": <a whole number from {lo} to {hi}, or null if you gave none>, '
            '"refused": <true if you decline to rate yourself, else false>}'
        )
    keys = ", ".join(label.key for label in instrument.labels)
    return (
        "Please state only the pattern you chose, as JSON: "
        f'{{"label": <one of {keys}, or null if you chose none>, '
        '"refused": <true if you decline to choose, else false>}'
    )


def schema(instrument: Instrument) -> dict[str, Any]:
    """The JSON schema the follow-up's answer is held to (structured output)."""
    # (``enum`` alone: llama.cpp's grammar from a schema, Ollama's too, keeps a bare
    # ``type`` and drops the ``enum`` beside it)
    if instrument.kind == "scale":
        levels: list[Any] = [level.value for level in instrument.levels]
        name, allowed = "level", {"enum": [*levels, None]}
    else:
        keys: list[Any] = [label.key for label in instrument.labels]
        name, allowed = "label", {"enum": [*keys, None]}
    return {
        "title": SCHEMA_TITLE,
        "type": "object",
        "properties": {name: allowed, "refused": {"type": "boolean"}},
        "required": [name, "refused"],
        "additionalProperties": False,
    }


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    level: int | None = None
    label: str | None = None
    refused: bool


def read_answer(
    instrument: Instrument, raw: str
) -> tuple[AnswerStatus, int | None, str | None, str]:
    """What the follow-up's JSON states: (status, level, label, note). A level off the
    scale is ``off_scale``, a label the rubric lacks or a text that is not the asked
    JSON ``unparseable``; nothing is guessed."""
    try:
        answer = _Answer.model_validate(orjson.loads(raw))
    except (orjson.JSONDecodeError, ValidationError, TypeError):
        shown = " ".join(raw.split())[:80]
        return "unparseable", None, None, f"the follow-up's answer is not the asked JSON: {shown!r}"
    if answer.refused:
        return "refused", None, None, "the follow-up's answer: refused"
    if instrument.kind == "scale":
        if answer.level is None:
            return "unparseable", None, None, "the follow-up's answer: no level (null)"
        if not instrument.scale_min <= answer.level <= instrument.scale_max:
            return "off_scale", None, None, f"the follow-up's answer: level {answer.level}"
        return "rated", answer.level, None, f"the follow-up's answer: level {answer.level}"
    if answer.label is None:
        return "unparseable", None, None, "the follow-up's answer: no label (null)"
    if answer.label not in {label.key for label in instrument.labels}:
        return "unparseable", None, None, f"the follow-up's answer: {answer.label!r} is no label"
    return "rated", None, answer.label, f"the follow-up's answer: {answer.label}"
