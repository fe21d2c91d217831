"""HTML from the page models: Jinja with autoescape on for every template, so agent
text is always text. Templates never use ``|safe``; data for the page's scripts goes
in as ``tojson`` inside a ``<script type="application/json">`` block.

A Jinja ``finalize`` passes every printed string through ``text.display`` (ANSI and OSC
sequences removed, other control characters and bidi overrides shown as U+FFFD, CRLF
kept as a line end), so no template can forget; Plotly labels are escaped (Plotly reads
some tags) and made-up tool names are charted as ``(unknown tool)``. Live updates fetch
the page again and swap its ``data-live`` regions, parsed with ``DOMParser``, never
``innerHTML``; the runs list updates rows with ``textContent``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pydantic import BaseModel

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.config.spend import cost_text
from contreact_ui.text import display, shorten

METRIC_LABELS = {
    "memory_ops_total": "memory ops",
    "messages_to_operator": "to operator",
    "response_chars": "response chars",
    "memory_write_chars": "memory-write chars",
    "reflection_chars": "reflection chars",
    "tool_calls": "tool calls",
    "tool_errors": "tool errors",
    "regenerations": "regenerations",
    "llm_calls": "LLM calls",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "llm_seconds": "LLM s",
}
"""Column heads of the cycle metrics (a field not named here shows with spaces)."""


def metric_label(name: str) -> str:
    return METRIC_LABELS.get(name, name.replace("_", " "))


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _instant(value: datetime | str | None) -> str:
    """A time of day to the millisecond (the date is in the title of the cell)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%H:%M:%S.%f")[:-3]


def _seconds(value: float | None) -> str:
    """A duration: milliseconds under a second, else seconds (minutes past 100 s)."""
    if value is None:
        return ""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 100:
        return f"{value:.2f} s"
    return f"{value / 60:.1f} min"


def _number(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) or digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _pretty(value: Any) -> str:
    """Indented JSON as plain text (escaped by autoescape like any other text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _query(params: Any, **changes: Any) -> str:
    """The query string of ``params`` (Starlette's QueryParams, repeated keys kept) with
    ``changes`` applied (None drops a key)."""
    pairs = [(k, v) for k, v in params.multi_items() if k not in changes]
    for key, value in changes.items():
        if value is None or value == "":
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            pairs.append((key, str(item)))
    return urlencode(pairs)


def _finalize(value: Any) -> Any:
    """Applied to every ``{{ expression }}`` before autoescape: any string a template
    prints is neutralized (ANSI escapes, control characters), so none can forget to."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return display(value)
    return value


_JSON_INVISIBLE = {
    code: f"\\u{code:04x}"
    for code in (
        *range(0x7F, 0xA0),  # DEL and the C1 controls
        0xAD,  # soft hyphen
        *range(0x200B, 0x2010),  # zero-width characters and the directional marks
        *range(0x2028, 0x202F),  # line/paragraph separators and bidi embeddings
        *range(0x2060, 0x2070),  # word joiner, bidi isolates
        0xFEFF,  # byte-order mark
    )
}
"""Characters orjson writes as they are (it escapes only the C0 controls) that would
hide or reorder text wherever the page source is read: written as JSON escapes, as
Jinja's own ``json.dumps`` (ASCII only) wrote them."""


def _json_text(value: Any, **_: Any) -> str:
    """``tojson``'s encoder: orjson (a long run's chart data is a megabyte; Jinja still
    escapes ``<``, ``>``, ``&`` and ``'`` in what this returns), with the invisible and
    bidirectional characters escaped."""
    return orjson.dumps(value, default=str).decode().translate(_JSON_INVISIBLE)


def environment() -> Environment:
    env = Environment(
        finalize=_finalize,
        loader=PackageLoader("contreact_ui", "templates"),
        autoescape=select_autoescape(["html"], default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.policies["json.dumps_function"] = _json_text
    env.filters["display"] = display
    env.filters["shorten"] = shorten
    env.filters["when"] = _when
    env.filters["number"] = _number
    env.filters["cost"] = cost_text
    env.filters["instant"] = _instant
    env.filters["seconds"] = _seconds
    env.filters["pretty"] = _pretty
    env.globals["query_with"] = _query
    env.globals["metric_fields"] = tuple(CycleMetrics.model_fields)
    env.globals["metric_label"] = metric_label
    return env


class Renderer:
    def __init__(self) -> None:
        self.env = environment()

    def page(
        self, template: str, page: BaseModel, data: dict[str, Any] | None = None, **extra: Any
    ) -> str:
        """The page's HTML; ``data`` (default: the whole page) goes in for its scripts."""
        if data is None:
            data = page.model_dump(mode="json")
        return self.env.get_template(template).render(page=page, data=data, **extra)

    def error(self, status: int, message: str) -> str:
        return self.env.get_template("error.html").render(status=status, message=message)
