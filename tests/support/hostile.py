"""Agent text that would act if a page rendered it as markup or a terminal as escapes:
script tags, event handlers, javascript: URLs, ANSI and OSC sequences, bidi overrides.
The dashboard's tests put it everywhere an agent can put text and check it stays text."""

from __future__ import annotations

from typing import Any

SCRIPT = "<script>window.__pwned = 'reflection'</script>"
HANDLER = "<img src=x onerror=\"window.__pwned='key'\">"
OPERATOR = "<b onmouseover=\"window.__pwned='operator'\">psst</b>\x1b]0;evil title\x07"
TOOL = "<svg onload=\"window.__pwned='tool'\">"
ANSI = "\x1b[2J\x1b[31mRED\x1b[0m"
BIDI = "\u202etxt.exe"
VALUE = (
    f"<script>window.__pwned='value'</script>{ANSI}"
    "<a href=\"javascript:window.__pwned='href'\">x</a>"
)
REFLECTION = f"{SCRIPT} {ANSI} {BIDI} cycle {{cycle}} & more"

MARKUP = (SCRIPT, HANDLER, TOOL, "<svg", "<b onmouseover", "<img src=x")
"""Strings that must never appear as elements: a page shows them as text."""


def replies() -> list[dict[str, Any]]:
    """A scripted backend's replies (the config's ``script``) carrying hostile text in a
    memory key and value, an operator message, a made-up tool and the reflection."""
    return [
        {
            "content": "",
            "tool_calls": [
                {"name": "write", "arguments": {"key": HANDLER, "value": VALUE}},
                {"name": "send_message_to_operator", "arguments": {"message": OPERATOR}},
            ],
        },
        {"content": "", "tool_calls": [{"name": TOOL, "arguments": {"x": ANSI}}]},
        {"content": REFLECTION},
    ]
