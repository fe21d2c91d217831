"""Agent text in the report: Jinja's autoescape makes it text, never markup; this makes
terminal escape sequences and other control characters (bidi overrides included)
visible instead of active or hidden. The same rules as the dashboard's
``contreact_ui.text.display`` (the analysis package does not import a service)."""

from __future__ import annotations

import re

ANSI_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def display(text: object) -> str:
    """ANSI sequences removed, other control characters shown as U+FFFD; newlines and
    tabs kept. None and NaN (a missing value in a dataframe) read as empty."""
    if text is None or (isinstance(text, float) and text != text):
        return ""
    value = str(text)
    if "\r" in value:
        value = value.replace("\r\n", "\n")
    if "\x1b" in value:
        value = ANSI_SEQUENCE.sub("", value)
    return CONTROL.sub(REPLACEMENT, value)
