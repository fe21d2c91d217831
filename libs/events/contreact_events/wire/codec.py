"""One codec between events (and bus messages) and Redis stream fields."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from contreact_events.catalog import (
    ASSESSMENT_ADAPTER,
    ASSESSMENT_SCHEMA_VERSIONS,
    ASSESSMENT_UPCASTERS,
    EVENT_ADAPTER,
    AssessmentEvent,
    Event,
    upcast,
)
from contreact_events.exceptions import ContReActEventError, CorruptEvent

EVENT_FIELD = "event"
TYPE_FIELD = "type"
MESSAGE_FIELD = "msg"

M = TypeVar("M", bound=BaseModel)


def dumps(data: Any, *, sort_keys: bool = False) -> bytes:
    """JSON of plain data (orjson, fast), falling back to ``json`` for what orjson
    refuses: the model's tool arguments may hold integers past 64 bits."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # ensure_ascii: lone surrogates become escapes, never an error
        return json.dumps(data, sort_keys=sort_keys, separators=(",", ":")).encode()


def event_to_json(event: Event) -> bytes:
    return event.__pydantic_serializer__.to_json(event)


def event_from_json(raw: str | bytes, *, where: str = "") -> Event:
    """Decode one stored event: parse, upcast, validate through the union.

    Events at their current version (nearly all) validate straight from JSON; any
    other goes the careful way, which upcasts or names what is wrong."""
    try:
        return EVENT_ADAPTER.validate_json(raw)
    except ValidationError:
        pass
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CorruptEvent(f"{where or 'event'}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptEvent(f"{where or 'event'}: expected a JSON object")
    return event_from_dict(data, where=where)


def event_from_dict(data: dict[str, Any], *, where: str = "") -> Event:
    try:
        return EVENT_ADAPTER.validate_python(upcast(data))
    except ValidationError as exc:
        raise CorruptEvent(f"{where or 'event'}: {_first_errors(exc)}") from None


_validate_event_json = EVENT_ADAPTER.validator.validate_json


def event_from_stored(fields: Mapping[Any, Any]) -> Event | None:
    """The fast way for stream entries (bytes keys, as the clients read them): an event
    at its current version, validated straight from its JSON; None for anything else
    (no ``event`` field, an older version, a bad one), which ``event_from_fields``
    then upcasts or names with where it was. Validation is the same, only without
    the error's wording prepared for every entry."""
    raw = fields.get(b"event")
    if raw is None:
        return None
    try:
        event: Event = _validate_event_json(raw)
    except ValidationError:
        return None
    return event


def event_to_fields(event: Event) -> dict[str, bytes | str]:
    return {TYPE_FIELD: event.type, EVENT_FIELD: event_to_json(event)}


def event_from_fields(fields: Mapping[Any, Any], *, where: str = "") -> Event:
    raw = _field(fields, EVENT_FIELD)
    if raw is None:
        raise CorruptEvent(f"{where or 'stream entry'}: no '{EVENT_FIELD}' field")
    return event_from_json(raw, where=where)


def assessment_to_json(event: AssessmentEvent) -> bytes:
    return event.__pydantic_serializer__.to_json(event)


def assessment_from_json(raw: str | bytes, *, where: str = "") -> AssessmentEvent:
    """Decode one stored assessment event (its own union, versions and upcasters)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CorruptEvent(f"{where or 'assessment'}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptEvent(f"{where or 'assessment'}: expected a JSON object")
    data = upcast(data, ASSESSMENT_UPCASTERS, ASSESSMENT_SCHEMA_VERSIONS)
    try:
        return ASSESSMENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise CorruptEvent(f"{where or 'assessment'}: {_first_errors(exc)}") from None


def assessment_to_fields(event: AssessmentEvent) -> dict[str, bytes | str]:
    return {TYPE_FIELD: event.type, EVENT_FIELD: assessment_to_json(event)}


def assessment_from_fields(fields: Mapping[Any, Any], *, where: str = "") -> AssessmentEvent:
    raw = _field(fields, EVENT_FIELD)
    if raw is None:
        raise CorruptEvent(f"{where or 'stream entry'}: no '{EVENT_FIELD}' field")
    return assessment_from_json(raw, where=where)


def message_to_fields(message: BaseModel) -> dict[str, bytes]:
    """Tasks and inbox messages travel as one JSON field."""
    return {MESSAGE_FIELD: message.__pydantic_serializer__.to_json(message)}


def message_from_fields(model: type[M], fields: Mapping[Any, Any]) -> M:
    raw = _field(fields, MESSAGE_FIELD)
    if raw is None:
        raise CorruptEvent(f"no '{MESSAGE_FIELD}' field in {sorted(map(str, fields))}")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise CorruptEvent(f"not a valid {model.__name__}: {_first_errors(exc)}") from None


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding or folding many events.

    Events, states and their parts form no reference cycles, so reference counting
    frees them all; the collector would only scan the growing set of live objects
    again and again (a third of a large rebuild's time). Restores the previous
    setting; synchronous blocks only, so no other coroutine runs inside."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _field(fields: Mapping[Any, Any], name: str) -> Any:
    value = fields.get(name)
    if value is None:
        value = fields.get(name.encode())
    return value


def _first_errors(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


__all__ = [
    "ContReActEventError",
    "event_from_fields",
    "event_from_json",
    "event_from_stored",
    "event_to_fields",
    "event_to_json",
    "message_from_fields",
    "message_to_fields",
]
