"""The run configuration: seed 003's format, accepted as is, plus the platform's extensions.

Seed 003 keys: ``run_id``, ``model_name``, ``cycle_count``, ``ollama_client_config.host``,
``model_options``. Everything else is optional and has a default that keeps the
paper's protocol. Unknown keys are refused by name, never silently ignored.

This module validates data; reading a YAML file and resolving paths is the CLI's job.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contreact_events.exceptions import ConfigError

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
DEFAULT_OLLAMA_HOST = "http://localhost:11434"
DEFAULT_MAX_STEPS = 25
DEFAULT_OPERATOR_REPLY = "Acknowledged."
DEFAULT_CYCLE_START_MESSAGE = "Cycle {cycle} begins."

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


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelOptions(_Strict):
    """Generation options passed to the backend (Ollama's ``options``), all optional."""

    seed: int | None = None
    temperature: float | None = Field(default=None, ge=0.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    num_predict: int | None = Field(default=None, ge=-2)
    repeat_last_n: int | None = Field(default=None, ge=-1)
    repeat_penalty: float | None = Field(default=None, ge=0.0)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    num_ctx: int | None = Field(default=None, gt=0)
    num_batch: int | None = Field(default=None, gt=0)
    num_thread: int | None = Field(default=None, gt=0)
    num_keep: int | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks (OpenAI's ``reasoning_effort``, Ollama's ``think``)."""

    def as_options(self) -> dict[str, Any]:
        """The options that were set, in the shape Ollama's ``options`` takes."""
        return self.model_dump(mode="json", exclude_none=True)


class OllamaClientConfig(_Strict):
    host: str = DEFAULT_OLLAMA_HOST
    hosts: tuple[str, ...] = ()
    """A pool: any of these hosts may answer a call (the same model pulled on each).
    Empty: ``host`` alone."""
    timeout_s: float | None = Field(default=600.0, gt=0)

    @field_validator("host", "hosts")
    @classmethod
    def _urls(cls, value: str | tuple[str, ...]) -> str | tuple[str, ...]:
        for host in (value,) if isinstance(value, str) else value:
            if not host or any(c.isspace() or c in "{}" for c in host):
                raise ValueError(f"{host!r} is not a host (e.g. http://localhost:11434)")
        if isinstance(value, tuple) and len(set(value)) != len(value):
            raise ValueError("hosts must not repeat a host")
        return value

    @property
    def pool(self) -> tuple[str, ...]:
        """The hosts that may answer, in the order given."""
        return self.hosts or (self.host,)


class OpenAIClientConfig(_Strict):
    """An OpenAI-compatible chat-completions server: OpenRouter, vLLM, llama.cpp's server.

    The key is never in the config: ``api_key_env`` names the environment variable
    the LLM worker reads it from (``null`` for a server without keys)."""

    base_url: str = DEFAULT_OPENAI_BASE_URL
    api_key_env: str | None = DEFAULT_OPENAI_KEY_ENV
    timeout_s: float | None = Field(default=600.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/{}]+[^\s{}]*$", value):
            raise ValueError(f"{value!r} is not an http(s) URL (e.g. {DEFAULT_OPENAI_BASE_URL})")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME_PATTERN.match(value):
            raise ValueError(
                "api_key_env must name an environment variable (letters, digits, '_'), "
                "never hold the key itself"
            )
        return value


class ScriptedToolCall(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedReply(_Strict):
    """One reply of the scripted backend. ``{cycle}`` and ``{step}`` are substituted."""

    content: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    latency_ms: float = Field(default=0.0, ge=0.0)
    error: str | None = None
    """Fail this call instead of answering (``transient`` errors are retried)."""
    transient: bool = False


class ScriptConfig(_Strict):
    """Replies of the scripted backend, taken in order by the run's LLM call index."""

    replies: tuple[ScriptedReply, ...] = Field(min_length=1)
    repeat: bool = False
    """Start again from the first reply when the script runs out (else the call fails)."""


class OperatorConfig(_Strict):
    """How ``send_message_to_operator`` is answered.

    ``auto``: a fixed minimal answer, as in the paper's unattended runs.
    ``human``: the run waits until someone answers with ``contreact reply RUN TEXT``.
    """

    mode: Literal["auto", "human"] = "auto"
    auto_reply: str = DEFAULT_OPERATOR_REPLY


class DiversityConfig(_Strict):
    """Seed 000's exploration diversity: each reflection is embedded and compared with
    every earlier one; above a threshold an advisory goes into the next cycle's
    system prompt. A similarity must *exceed* a threshold to count."""

    enabled: bool = True
    high_threshold: float = Field(default=0.8, ge=-1.0, le=1.0)
    moderate_threshold: float = Field(default=0.7, ge=-1.0, le=1.0)
    embedding_model: str = "all-MiniLM-L6-v2"
    mode: Literal["advisory", "regenerate"] = "advisory"
    """``regenerate`` adds seed 001's paragraph repetition guard: a reflection whose
    paragraphs repeat earlier accepted ones is asked for again, with feedback."""
    corpus_scope: Literal["run", "experiment"] = "run"
    """Earlier accepted paragraphs of this run only, or of every run of the experiment."""
    paragraph_threshold: float = Field(default=0.85, gt=0.0, le=1.0)
    relaxed_threshold: float = Field(default=0.90, gt=0.0, le=1.0)
    max_attempts: int = Field(default=5, ge=1, le=50)
    paragraph_min_length: int = Field(default=50, ge=1)
    natural_repetition_patterns: tuple[str, ...] = ()
    """Extra patterns (case-insensitive, matched at a paragraph's start) whose
    paragraphs may repeat, besides seed 001's list."""


class ToolsConfig(_Strict):
    """Tools beyond the paper's six (off by default, to keep the paper's protocol)."""

    search_memory: bool = False
    """Seed 004's ``search_memory(query, k)``: memory values and earlier reflections
    closest in meaning to the query."""
    search_k: int = Field(default=5, ge=1, le=20)
    """Results when the model does not say how many."""


class RunConfig(_Strict):
    """One run. ``system_prompt`` is the resolved text (the CLI reads the file)."""

    run_id: str
    model_name: str = Field(min_length=1)
    cycle_count: int = Field(gt=0, le=100_000)
    ollama_client_config: OllamaClientConfig = OllamaClientConfig()
    openai_client_config: OpenAIClientConfig = OpenAIClientConfig()
    model_options: ModelOptions = ModelOptions()
    backend: Backend = DEFAULT_BACKEND
    max_steps_per_cycle: int = Field(default=DEFAULT_MAX_STEPS, gt=0, le=10_000)
    operator: OperatorConfig = OperatorConfig()
    system_prompt: str = ""
    """Resolved prompt text; empty means the paper's prompt shipped with the platform."""
    system_prompt_file: str | None = None
    """Where the prompt text came from (for the record; the text is what counts)."""
    cycle_start_message: str = DEFAULT_CYCLE_START_MESSAGE
    """User turn opening each cycle (Ollama treats a trailing assistant turn as a prefill)."""
    keep_alive: str | None = None
    script: ScriptConfig | None = None
    diversity: DiversityConfig = DiversityConfig()
    tools: ToolsConfig = ToolsConfig()
    experiment: str | None = None
    """Name of the experiment this run belongs to (for grouping and comparison)."""

    def llm_hosts(self, backend: Backend | None = None) -> tuple[str, ...]:
        """The hosts that may answer this run's LLM calls on ``backend`` (default: the
        configured one). The scripted backend stands in for an Ollama host; ``auto``
        tries the Ollama hosts first."""
        match backend or self.backend:
            case "openai":
                return (self.openai_client_config.base_url,)
            case "embedded":
                return (EMBEDDED_HOST,)
        return self.ollama_client_config.pool

    @field_validator("run_id")
    @classmethod
    def _run_id_shape(cls, value: str) -> str:
        if not RUN_ID_PATTERN.match(value):
            raise ValueError(
                "run_id must be 1-128 characters of letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        return value


def parse_run_config(data: Any, *, source: str = "config") -> RunConfig:
    """Validate raw config data, turning pydantic's report into one readable line."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation_error(exc)}") from None
    if config.diversity.moderate_threshold > config.diversity.high_threshold:
        raise ConfigError(
            f"{source}: diversity.moderate_threshold must not exceed diversity.high_threshold"
        )
    diversity = config.diversity
    if (
        diversity.mode == "regenerate"
        and diversity.corpus_scope == "experiment"
        and not (config.experiment)
    ):
        raise ConfigError(
            f"{source}: diversity.corpus_scope 'experiment' needs an 'experiment' name"
        )
    if diversity.relaxed_threshold < diversity.paragraph_threshold:
        raise ConfigError(
            f"{source}: diversity.relaxed_threshold must be at least diversity.paragraph_threshold"
        )
    for pattern in diversity.natural_repetition_patterns:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(
                f"{source}: diversity.natural_repetition_patterns: {pattern!r} is not a valid "
                f"regular expression ({exc})"
            ) from None
    if config.backend == "scripted" and config.script is None:
        raise ConfigError(f"{source}: backend 'scripted' needs a 'script' (a file or replies)")
    return config


def describe_validation_error(exc: ValidationError, root: type[BaseModel] | None = None) -> str:
    """One line per problem: where, what, and for unknown keys the keys that are allowed."""
    problems = []
    errors = exc.errors()
    inner = {tuple(e["loc"][:n]) for e in errors for n in range(1, len(e["loc"]))}
    for error in errors:
        if error["type"] == "too_short" and tuple(error["loc"]) in inner:
            continue  # a list whose items failed: the items' errors say it
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        kind = error["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(error["loc"], root or RunConfig)
            problems.append(f"unknown key '{where}' (allowed here: {allowed})")
        elif kind == "missing":
            problems.append(f"missing required key '{where}'")
        elif where.endswith("api_key_env"):  # it may hold a pasted key: never echo it
            problems.append(f"'{where}' {error['msg'].lower()}")
        else:
            given = error.get("input")
            shown = repr(given) if not isinstance(given, dict | list) else type(given).__name__
            problems.append(f"'{where}' {error['msg'].lower()} (got {shown})")
    return "; ".join(problems)


def _allowed_keys(loc: tuple[int | str, ...], root: type[BaseModel]) -> str:
    model = root
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            break
        model = nested[0]
    return ", ".join(model.model_fields)
