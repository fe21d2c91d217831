"""Agent text on the dashboard's pages: ``display`` and ``shorten``
(``contreact_events.untrusted_text``, shared with the CLI and the analysis report)."""

from __future__ import annotations

from contreact_events.untrusted_text import display, shorten

__all__ = ["display", "shorten"]
