"""Markdown pieces every generated page uses: table cells that cannot break a table or
become HTML, code spans, the banner that says a page is generated."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence


def banner(source: str) -> str:
    """The first lines of a generated page: where it comes from, how to remake it."""
    return f"<!-- Generated from {source} by `python -m tools.docs_gen`: do not edit by hand. -->\n"


def cell(text: object) -> str:
    """Plain text as one table cell: no newline, no bar, no HTML."""
    return _escape(" ".join(str(text).split()))


def _escape(value: str) -> str:
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("*", "\\*")
        .replace("_", "\\_")
    )


def prose(text: object) -> str:
    """A docstring's text as one table cell: its ``code`` (reST) or `code` spans stay code
    spans, the rest is plain text."""
    value = " ".join(str(text).split())
    parts = re.split(r"``(.+?)``|`([^`]+?)`", value)
    out = []
    for index, part in enumerate(parts):
        if part is None:
            continue
        out.append(_escape(part) if index % 3 == 0 else code(part))
    return "".join(out)


def code(text: object) -> str:
    """Text as a code span, in a table cell (bars escaped)."""
    value = " ".join(str(text).split()).replace("|", "\\|")
    ticks = "``" if "`" in value else "`"
    pad = " " if ticks == "``" else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
