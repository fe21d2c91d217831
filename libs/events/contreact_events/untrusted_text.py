"""Agent text is untrusted: shown on a page or in a report it is text, never markup, and
it carries no terminal control sequences. An HTML template's autoescape makes it text;
``display`` makes the escape sequences and other control characters visible instead of
active or hidden. The dashboard's pages (``contreact_ui``) and the analysis report
(``contreact_analysis.report``) both show text through it; the dashboard's
``static/app.js`` has the same rules for what its pages update live."""

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
    """Text to show: ANSI escape sequences removed, any other control character (bidi
    overrides included) shown as U+FFFD; newlines (CRLF as LF) and tabs kept. None and
    NaN (a missing value in a dataframe) read as empty."""
    if text is None or (isinstance(text, float) and text != text):
        return ""
    value = str(text)
    if "\r" in value:
        value = value.replace("\r\n", "\n")  # a line ending, not a control sequence
    if "\x1b" in value:
        value = ANSI_SEQUENCE.sub("", value)
    return CONTROL.sub(REPLACEMENT, value)


def shorten(text: object, limit: int) -> str:
    """``display(text)``, cut to ``limit`` characters with an ellipsis when longer."""
    value = display(text)
    return value if len(value) <= limit else value[: max(limit - 1, 0)] + "…"
