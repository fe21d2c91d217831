"""Shapes of the Redis replies we read, in one place.

Clients are made with ``decode_responses=False``, so replies are bytes; redis-py's
annotations admit str and None as well. These helpers state the shape once
instead of casting at every call.
"""

from __future__ import annotations

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
