"""Shapes of the Redis replies we read, in one place.

Clients are made with ``decode_responses=False``, so replies are bytes; redis-py's
annotations admit str and None as well. These helpers state the shape once
instead of casting at every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

Entry = tuple[bytes, dict[bytes, bytes]]
"""A stream entry: its id and its fields."""


def entries(reply: Any) -> list[Entry]:
    """XRANGE / XREVRANGE, or the entry list of XAUTOCLAIM."""
    return cast(list[Entry], reply or [])


def stream_entries(reply: Any) -> list[Entry]:
    """XREAD / XREADGROUP over streams: their entries, streams in order."""
    out: list[Entry] = []
    for _stream, items in reply or []:
        out.extend(cast(list[Entry], items))
    return out


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def text_map(reply: Any) -> dict[str, str]:
    """HGETALL as text."""
    return {text(k): text(v) for k, v in (reply or {}).items()}


def texts(reply: Any) -> list[str]:
    """SMEMBERS / ZRANGE as text."""
    return [text(v) for v in reply or []]


def as_bytes(value: Any) -> bytes:
    """An id or name from a reply (bytes, or text in redis-py's annotations) as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


def entry_id_pair(value: Any) -> tuple[int, int]:
    """A stream entry id as a comparable pair (``0-0`` for nothing)."""
    text = as_bytes(value).decode() if value else "0-0"
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def stream_fields(fields: Mapping[str, Any]) -> Any:
    """Stream fields for XADD, as redis-py's (invariant) annotation wants them."""
    return dict(fields)
