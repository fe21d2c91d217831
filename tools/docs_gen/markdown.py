"""Markdown pieces every generated page uses: table cells that cannot break a table or
become HTML, code spans, the banner that says a page is generated."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def banner(source: str) -> str:
    """The first lines of a generated page: where it comes from, how to remake it."""
    return f"<!-- Generated from {source} by `python -m tools.docs_gen`: do not edit by hand. -->\n"


def cell(text: object) -> str:
    """Plain text as one table cell: no newline, no bar, no HTML."""
    value = " ".join(str(text).split())
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("*", "\\*")
        .replace("_", "\\_")
    )


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
