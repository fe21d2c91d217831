"""Agent text on the dashboard's pages: ``display`` (``contreact_events.untrusted_text``,
shared with the analysis report) and ``shorten``."""

from __future__ import annotations

from contreact_events.untrusted_text import display

__all__ = ["display", "shorten"]


def shorten(text: object, limit: int) -> str:
    value = display(text)
    return value if len(value) <= limit else value[: max(limit - 1, 0)] + "…"
