"""The building blocks of every config model: the strict base, the shapes of names and
texts, and the limits and defaults they share."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
IDENTIFIER_RULE = (
    "1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit"
)
"""Run ids, experiment names: anything that becomes part of a Redis key or a file name."""
DEFAULT_OLLAMA_HOST = "http://localhost:11434"
DEFAULT_MAX_STEPS = 25
DEFAULT_OPERATOR_REPLY = "Acknowledged."
DEFAULT_CYCLE_START_MESSAGE = "Cycle {cycle} begins."

MAX_NAME_CHARS = 256
"""Model names, hosts, file names: short single-line texts."""
MAX_TEXT_CHARS = 20_000
"""Operator auto reply, cycle-start message, scripted replies: texts put into prompts."""
MAX_PROMPT_CHARS = 200_000
"""The system prompt (the paper's is under 3,000 characters)."""

Identifier = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN.pattern)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]

Backend = Literal["ollama", "openai", "embedded", "scripted", "auto"]
ResolvedBackend = Literal["ollama", "openai", "embedded", "scripted"]
ReasoningEffort = Literal["low", "medium", "high"]
DEFAULT_BACKEND: Backend = "ollama"
"""Seed 003's configs are Ollama configs. ``auto`` (Ollama, else the embedded model)
must be asked for by name; it is never the default."""
DEFAULT_OPENAI_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_OPENAI_KEY_ENV = "OPENROUTER_API_KEY"
EMBEDDED_HOST = "embedded"
"""The host of the embedded backend: the worker process itself."""
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class Strict(BaseModel):
    """Frozen, refuses unknown keys by name, and every number is finite: ``.inf`` or
    ``.nan`` (YAML) would pass a ``gt=0`` bound, then be sent as JSON ``null`` and
    dead-lettered by the orchestrator, so the config is refused where it is read."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
