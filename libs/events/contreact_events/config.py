"""The run configuration: seed 003's format, accepted as is, plus the platform's extensions.

Seed 003 keys: ``run_id``, ``model_name``, ``cycle_count``, ``ollama_client_config.host``,
``model_options``. Everything else is optional and has a default that keeps the
paper's protocol. Unknown keys are refused by name, never silently ignored.

Validation is strict and the same everywhere (CLI, orchestrator, dashboard: they all
validate through ``RunConfig``): a number is a number (``true`` is not 1, ``"10"`` is
not 10), a flag is ``true``/``false``, every name that becomes part of a Redis key or
a file path has the shape of a run id, and every free text has a size cap.

This module validates data; reading a YAML file and resolving paths is the CLI's job.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from contreact_events.exceptions import ConfigError

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


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelOptions(_Strict):
    """Generation options passed to the backend (Ollama's ``options``), all optional."""

    seed: StrictInt | None = None
    temperature: StrictFloat | None = Field(default=None, ge=0.0)
    top_p: StrictFloat | None = Field(default=None, gt=0.0, le=1.0)
    top_k: StrictInt | None = Field(default=None, ge=0)
    min_p: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    num_predict: StrictInt | None = Field(default=None, ge=-2)
    repeat_last_n: StrictInt | None = Field(default=None, ge=-1)
    repeat_penalty: StrictFloat | None = Field(default=None, ge=0.0)
    presence_penalty: StrictFloat | None = None
    frequency_penalty: StrictFloat | None = None
    num_ctx: StrictInt | None = Field(default=None, gt=0)
    num_batch: StrictInt | None = Field(default=None, gt=0)
    num_thread: StrictInt | None = Field(default=None, gt=0)
    num_keep: StrictInt | None = None
    stop: tuple[Name, ...] | None = Field(default=None, max_length=32)
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks (OpenAI's ``reasoning_effort``, Ollama's ``think``)."""

    def as_options(self) -> dict[str, Any]:
        """The options that were set, in the shape Ollama's ``options`` takes."""
        return self.model_dump(mode="json", exclude_none=True)


class OllamaClientConfig(_Strict):
    host: Name = DEFAULT_OLLAMA_HOST
    """The server's URL. No credentials: the config is recorded in the run log and
    its exports, so a ``user:password@`` in it is refused."""
    hosts: tuple[Name, ...] = Field(default=(), max_length=64)
    """A pool: any of these hosts may answer a call (the same model pulled on each).
    Empty: ``host`` alone."""
    timeout_s: StrictFloat | None = Field(default=600.0, gt=0)
    """Longest wait for one answer (a long generation included)."""
    connect_timeout_s: StrictFloat = Field(default=5.0, gt=0, le=600)
    """Longest wait to reach the server: a host that drops packets fails after this,
    not after ``timeout_s``."""

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

    base_url: Name = DEFAULT_OPENAI_BASE_URL
    api_key_env: Name | None = DEFAULT_OPENAI_KEY_ENV
    timeout_s: StrictFloat | None = Field(default=600.0, gt=0)

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
    name: Name
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedReply(_Strict):
    """One reply of the scripted backend. ``{cycle}`` and ``{step}`` are substituted."""

    content: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    latency_ms: StrictFloat = Field(default=0.0, ge=0.0)
    error: Text | None = None
    """Fail this call instead of answering (``transient`` errors are retried)."""
    transient: StrictBool = False


class ScriptConfig(_Strict):
    """Replies of the scripted backend, taken in order by the run's LLM call index."""

    replies: tuple[ScriptedReply, ...] = Field(min_length=1, max_length=100_000)
    repeat: StrictBool = False
    """Start again from the first reply when the script runs out (else the call fails)."""


class OperatorConfig(_Strict):
    """How ``send_message_to_operator`` is answered.

    ``auto``: a fixed minimal answer, as in the paper's unattended runs.
    ``human``: the run waits until someone answers with ``contreact reply RUN TEXT``.
    """

    mode: Literal["auto", "human"] = "auto"
    auto_reply: Text = DEFAULT_OPERATOR_REPLY
    timeout_s: float | None = Field(default=None, gt=0)
    """``human``: answer with ``auto_reply`` when nobody replied within this many
    seconds (the reply is logged as ``by: timeout``). None: wait as long as it takes."""


class DeadlinesConfig(_Strict):
    """How long a run waits for each kind of task, counted from when it was sent, and
    how often a task that got no usable answer is sent again before the run fails
    (an embedding that keeps failing ends its cycle without an assessment instead)."""

    check_s: float = Field(default=120.0, gt=0)
    """The model check (the LLM worker resolves the backend and finds the model)."""
    llm_s: float | None = Field(default=None, gt=0)
    """One completion. None: three times ``ollama_client_config.timeout_s`` plus a
    minute (the worker's own retries fit), or 30 minutes when that timeout is off."""
    memory_s: float = Field(default=60.0, gt=0)
    embed_s: float = Field(default=300.0, gt=0)
    """A reflection embedding, a paragraph check or a ``search_memory`` call."""
    retries: int = Field(default=2, ge=0, le=100)
    """Sends of a failed task after the first."""


class DiversityConfig(_Strict):
    """Seed 000's exploration diversity: each reflection is embedded and compared with
    every earlier one; above a threshold an advisory goes into the next cycle's
    system prompt. A similarity must *exceed* a threshold to count."""

    enabled: StrictBool = True
    high_threshold: StrictFloat = Field(default=0.8, ge=-1.0, le=1.0)
    moderate_threshold: StrictFloat = Field(default=0.7, ge=-1.0, le=1.0)
    embedding_model: Name = "all-MiniLM-L6-v2"
    mode: Literal["advisory", "regenerate"] = "advisory"
    """``regenerate`` adds seed 001's paragraph repetition guard: a reflection whose
    paragraphs repeat earlier accepted ones is asked for again, with feedback."""
    corpus_scope: Literal["run", "experiment"] = "run"
    """Earlier accepted paragraphs of this run only, or of every run of the experiment."""
    paragraph_threshold: StrictFloat = Field(default=0.85, gt=0.0, le=1.0)
    relaxed_threshold: StrictFloat = Field(default=0.90, gt=0.0, le=1.0)
    max_attempts: StrictInt = Field(default=5, ge=1, le=50)
    paragraph_min_length: StrictInt = Field(default=50, ge=1, le=100_000)
    natural_repetition_patterns: tuple[Name, ...] = Field(default=(), max_length=100)
    feedback_placement: Literal["pinned", "after_newest"] = "pinned"
    """Where the regeneration feedback stands in the prompt: ``pinned`` where the
    rejected answer was, before the new attempt's tool calls (seed 001: the request
    is augmented once); ``after_newest`` after the newest message of every call, which
    is how runs recorded before configuration version 3 ran (kept for their replay)."""
    """Extra patterns (case-insensitive, matched at a paragraph's start) whose
    paragraphs may repeat, besides seed 001's list."""


class ToolsConfig(_Strict):
    """Tools beyond the paper's six (off by default, to keep the paper's protocol)."""

    search_memory: StrictBool = False
    """Seed 004's ``search_memory(query, k)``: memory values and earlier reflections
    closest in meaning to the query."""
    search_k: StrictInt = Field(default=5, ge=1, le=20)
    """Results when the model does not say how many."""


class LimitsConfig(_Strict):
    """Size caps on what the model writes and reads, so that one runaway value is not
    copied into every later prompt. A call over a cap is answered with a tool error
    saying the limit (the model can shorten or split it); an output over its cap
    reaches the model cut, with a note. ``null`` switches a cap off (runs recorded
    before the caps existed read as all ``null``, which is how they ran)."""

    memory_value_chars: StrictInt | None = Field(default=20_000, gt=0)
    """Longest value ``write`` stores."""
    tool_argument_chars: StrictInt | None = Field(default=4_000, gt=0)
    """Longest other text argument (keys, patterns, queries, operator messages)."""
    tool_output_chars: StrictInt | None = Field(default=20_000, gt=0)
    """Longest tool output put into the prompt (the log keeps the whole output); tool
    errors are never cut."""
    llm_content_chars: StrictInt | None = Field(default=50_000, gt=0)
    """Longest answer text the LLM worker passes on (the rest is cut and counted)."""
    cut_arguments_in_history: StrictBool = True
    """Tool-call arguments over their cap (``memory_value_chars`` for ``write``'s
    value, ``tool_argument_chars`` for the others) reach later prompts cut there, with
    a note, as outputs do (the log keeps the whole call). ``false``: they are sent
    back whole in every later call, which is how runs recorded before configuration
    version 4 ran (kept for their replay)."""


class RunConfig(_Strict):
    """One run. ``system_prompt`` is the resolved text (the CLI reads the file)."""

    run_id: str
    model_name: Name
    cycle_count: StrictInt = Field(gt=0, le=100_000)
    ollama_client_config: OllamaClientConfig = OllamaClientConfig()
    openai_client_config: OpenAIClientConfig = OpenAIClientConfig()
    model_options: ModelOptions = ModelOptions()
    backend: Backend = DEFAULT_BACKEND
    max_steps_per_cycle: StrictInt = Field(default=DEFAULT_MAX_STEPS, gt=0, le=10_000)
    final_call_at_step_cap: StrictBool = True
    """When a cycle reaches ``max_steps_per_cycle`` while the model still calls tools,
    call it once more without tools, so the cycle ends with a real reflection
    (``false``: end the cycle on the cut answer, as runs recorded before did)."""
    operator: OperatorConfig = OperatorConfig()
    system_prompt: str = Field(default="", max_length=MAX_PROMPT_CHARS)
    """Resolved prompt text; empty means the paper's prompt shipped with the platform."""
    system_prompt_file: Annotated[str, StringConstraints(max_length=4096)] | None = None
    """Where the prompt text came from (for the record; the text is what counts)."""
    cycle_start_message: Text = DEFAULT_CYCLE_START_MESSAGE
    """User turn opening each cycle (Ollama treats a trailing assistant turn as a prefill)."""
    keep_alive: Annotated[str, StringConstraints(pattern=r"^-?[0-9][0-9a-z.]{0,31}$")] | None = None
    """How long Ollama keeps the model loaded: a number of seconds or a duration (10m, 1h)."""
    script: ScriptConfig | None = None
    diversity: DiversityConfig = DiversityConfig()
    tools: ToolsConfig = ToolsConfig()
    deadlines: DeadlinesConfig = DeadlinesConfig()
    limits: LimitsConfig = LimitsConfig()
    experiment: str | None = None
    """Name of the experiment this run belongs to (for grouping and comparison); the
    same shape as a run id, since it becomes part of Redis keys."""

    @property
    def llm_deadline_s(self) -> float:
        if self.deadlines.llm_s is not None:
            return self.deadlines.llm_s
        timeout = self.ollama_client_config.timeout_s
        return 3 * timeout + 60 if timeout is not None else 1800.0

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
        return check_identifier("run_id", value)

    @field_validator("ollama_client_config", "openai_client_config")
    @classmethod
    def _no_credentials(
        cls, value: OllamaClientConfig | OpenAIClientConfig
    ) -> OllamaClientConfig | OpenAIClientConfig:
        urls = value.pool if isinstance(value, OllamaClientConfig) else (value.base_url,)
        for url in urls:
            if re.match(r"^[a-z][a-z0-9+.-]*://[^/@]*@", url, re.IGNORECASE):
                raise ValueError(
                    "a host must not hold credentials (user:password@): the config is "
                    "recorded in the run log and its exports; put a proxy in front (an "
                    "OpenAI-compatible key goes in the environment, named by api_key_env)"
                )
        return value

    @field_validator("experiment")
    @classmethod
    def _experiment_shape(cls, value: str | None) -> str | None:
        return None if value is None else check_identifier("experiment", value)

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        problem = inconsistency(self)
        if problem is not None:
            raise ValueError(problem)
        return self


def check_identifier(what: str, value: str) -> str:
    """``value`` if it may become part of a Redis key or a file name; else ValueError."""
    if not RUN_ID_PATTERN.match(value):
        shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
        raise ValueError(f"{what} must be {IDENTIFIER_RULE} (got {shown})")
    return value


def inconsistency(config: RunConfig) -> str | None:
    """What is wrong between the settings of a config, if anything."""
    diversity = config.diversity
    if diversity.moderate_threshold > diversity.high_threshold:
        return "diversity.moderate_threshold must not exceed diversity.high_threshold"
    if (
        diversity.mode == "regenerate"
        and diversity.corpus_scope == "experiment"
        and not (config.experiment)
    ):
        return "diversity.corpus_scope 'experiment' needs an 'experiment' name"
    if diversity.relaxed_threshold < diversity.paragraph_threshold:
        return "diversity.relaxed_threshold must be at least diversity.paragraph_threshold"
    for pattern in diversity.natural_repetition_patterns:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            return (
                f"diversity.natural_repetition_patterns: {pattern!r} is not a valid "
                f"regular expression ({exc})"
            )
    if config.backend == "scripted" and config.script is None:
        return "backend 'scripted' needs a 'script' (a file or replies)"
    return None


def parse_run_config(data: Any, *, source: str = "config") -> RunConfig:
    """Validate raw config data, turning pydantic's report into one readable line."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation_error(exc)}") from None


def describe_validation_error(exc: ValidationError, root: type[BaseModel] | None = None) -> str:
    """One line per problem: where, what, and for unknown keys the keys that are allowed."""
    problems = []
    errors = exc.errors()
    inner = {tuple(e["loc"][:n]) for e in errors for n in range(1, len(e["loc"]))}
    for error in errors:
        if error["type"] == "too_short" and tuple(error["loc"]) in inner:
            continue  # a list whose items failed: the items' errors say it
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        where = where.encode("unicode_escape").decode("ascii")  # a key may hold a newline
        kind = error["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(error["loc"], root or RunConfig)
            problems.append(f"unknown key '{where}' (allowed here: {allowed})")
        elif kind == "missing":
            problems.append(f"missing required key '{where}'")
        elif where.endswith("api_key_env"):  # it may hold a pasted key: never echo it
            problems.append(f"'{where}' {error['msg'].lower()}")
        elif kind == "value_error":  # our own validators: the message says it all
            problems.append(str(error["msg"]).removeprefix("Value error, "))
        else:
            given = error.get("input")
            shown = repr(given) if not isinstance(given, dict | list) else type(given).__name__
            if len(shown) > 60:
                shown = f"{shown[:57]}... ({len(str(given))} characters)"
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
