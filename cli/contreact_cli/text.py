"""Agent text is untrusted: shown in a terminal it carries no control sequences.

One neutraliser for every surface (``contreact_events.untrusted_text.display``, which
the dashboard and the report use too): escape sequences removed, any other control
character (bidi overrides included) shown as U+FFFD, so what was there is visible and
nothing is active. ``safe`` adds what a terminal line needs: one line, a length."""

from __future__ import annotations

from contreact_events.untrusted_text import display, shorten


def safe(text: str, limit: int | None = None, *, one_line: bool = False) -> str:
    """``text`` neutralised (``display``); optionally on one line and shortened."""
    cleaned = display(text)
    if one_line:
        cleaned = " ".join(cleaned.split())
    return cleaned if limit is None else shorten(cleaned, limit)
