"""The model path's contract: the JSON schema an analysis model is given, and the
validation of what it answers. Pure.

A backend with structured output (Ollama's ``format``, an OpenAI-compatible server's
``response_format``, llama.cpp's grammar) is given ``analysis_json_schema()``; one with
only a JSON mode is given the same schema in the prompt. Whatever comes back goes
through ``parse_model_analysis``: an answer that is too long, not JSON, not one object,
missing a field, with a field of the wrong type or out of its enum or range, with a key
the schema does not have, or naming a memory the run does not have, is rejected with a
one-line reason, and the caller falls back to the heuristic analyser. One surrounding
Markdown code fence (```json ... ```) is tolerated: models add it even in JSON mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from contreact_events.catalog.exchange import (
    MAX_MEMORY_KEY_CHARS,
    Analysis,
    AnalysisFields,
)

MAX_ANSWER_CHARS = 4000
"""Longer answers are refused unread: the fields' limits add up to well under this."""

_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL | re.IGNORECASE)

Problem = Literal["oversized", "malformed", "partial", "invalid", "unknown_memory"]


@dataclass(frozen=True, slots=True)
class AnalysisRejected:
    """A model answer that is not an analysis, and why."""

    problem: Problem
    reason: str


def analysis_json_schema() -> dict[str, Any]:
    """The JSON schema of a model's answer (every key required, no other key)."""
    schema = AnalysisFields.model_json_schema()
    schema["required"] = list(AnalysisFields.model_fields)
    schema["properties"]["relevant_memories"]["items"]["maxLength"] = MAX_MEMORY_KEY_CHARS
    return schema


def parse_model_analysis(
    raw: str, known_memories: Collection[str] | None = None
) -> Analysis | AnalysisRejected:
    """The answer as an ``Analysis`` (``analyser="model"``), or why it is not one.
    ``known_memories``: the run's memory keys; when given, every key the answer names
    must be one of them."""
    if len(raw) > MAX_ANSWER_CHARS:
        return AnalysisRejected(
            "oversized", f"the answer has {len(raw)} characters, at most {MAX_ANSWER_CHARS}"
        )
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return AnalysisRejected("malformed", f"the answer is not JSON: {exc}")
    if not isinstance(data, dict):
        return AnalysisRejected(
            "malformed", f"the answer is JSON {type(data).__name__}, not one object"
        )
    missing = [name for name in AnalysisFields.model_fields if name not in data]
    if missing:
        return AnalysisRejected("partial", f"the answer lacks {', '.join(missing)}")
    try:
        fields = AnalysisFields.model_validate_json(text)
    except ValidationError as exc:
        return AnalysisRejected("invalid", _first_error(exc))
    too_long = [k for k in fields.relevant_memories if len(k) > MAX_MEMORY_KEY_CHARS]
    if too_long:
        return AnalysisRejected(
            "invalid", f"a relevant memory key has over {MAX_MEMORY_KEY_CHARS} characters"
        )
    if known_memories is not None:
        unknown = [k for k in fields.relevant_memories if k not in known_memories]
        if unknown:
            names = ", ".join(repr(k[:40]) for k in unknown[:3])
            return AnalysisRejected(
                "unknown_memory", f"the answer names memories the run does not have: {names}"
            )
    return Analysis(**fields.model_dump(), analyser="model")


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "the answer"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
