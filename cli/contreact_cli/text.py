"""Agent text is untrusted: shown in a terminal it must not carry control sequences."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe(text: str, limit: int | None = None, *, one_line: bool = False) -> str:
    """Drop control characters (ANSI escapes, bidi overrides); optionally shorten."""
    cleaned = _CONTROL.sub("", text)
    if one_line:
        cleaned = " ".join(cleaned.split())
    if limit is not None and len(cleaned) > limit:
        cleaned = cleaned[: max(limit - 1, 0)] + "…"
    return cleaned
