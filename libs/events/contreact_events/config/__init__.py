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
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contreact_events.config.backends import (
    ModelOptions,
    OllamaClientConfig,
    OpenAIClientConfig,
    ScriptConfig,
    ScriptedReply,
    ScriptedToolCall,
)
from contreact_events.config.errors import describe_validation_error
from contreact_events.config.fields import (
    DEFAULT_BACKEND,
    DEFAULT_CYCLE_START_MESSAGE,
    DEFAULT_MAX_STEPS,
    DEFAULT_OLLAMA_HOST,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_KEY_ENV,
    DEFAULT_OPERATOR_REPLY,
    EMBEDDED_HOST,
    ENV_NAME_PATTERN,
    IDENTIFIER_RULE,
    MAX_NAME_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TEXT_CHARS,
    RUN_ID_PATTERN,
    Backend,
    Identifier,
    Name,
    ReasoningEffort,
    ResolvedBackend,
    Strict,
    Text,
)
from contreact_events.config.history import HistoryConfig
from contreact_events.config.hosts import CREDENTIALS_FIX, has_credentials
from contreact_events.config.spend import Budget, ModelPrice, price_table_shape
from contreact_events.config.tool_defs import (
    BUILT_IN_TOOLS,
    MAX_ADDED_TOOLS,
    AddedTool,
    SelfReportConfig,
    tools_problem,
)
from contreact_events.diversity.linear_regex import compile_linear
from contreact_events.exceptions import ConfigError

__all__ = [
    "DEFAULT_BACKEND",
    "DEFAULT_CYCLE_START_MESSAGE",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_KEY_ENV",
    "DEFAULT_OPERATOR_REPLY",
    "EMBEDDED_HOST",
    "ENV_NAME_PATTERN",
    "IDENTIFIER_RULE",
    "MAX_NAME_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_TEXT_CHARS",
    "RUN_ID_PATTERN",
    "AddedTool",
    "Backend",
    "CognitionConfig",
    "DeadlinesConfig",
    "DiversityConfig",
    "Identifier",
    "LimitsConfig",
    "ModelOptions",
    "Name",
    "OllamaClientConfig",
    "OpenAIClientConfig",
    "OperatorConfig",
    "ReasoningEffort",
    "ResolvedBackend",
    "RunConfig",
    "ScriptConfig",
    "ScriptedReply",
    "ScriptedToolCall",
    "SelfReportConfig",
    "Text",
    "ToolsConfig",
    "check_identifier",
    "describe_validation_error",
    "inconsistency",
    "parse_run_config",
]


class OperatorConfig(Strict):
    """How ``send_message_to_operator`` is answered.

    ``auto``: a fixed minimal answer, as in the paper's unattended runs.
    ``human``: the run waits until someone answers with ``contreact reply RUN TEXT``.
    """

    mode: Literal["auto", "human"] = "auto"
    auto_reply: Text = DEFAULT_OPERATOR_REPLY
    timeout_s: float | None = Field(default=None, gt=0)
    """``human``: answer with ``auto_reply`` when nobody replied within this many
    seconds (the reply is logged as ``by: timeout``). None: wait as long as it takes."""


class DeadlinesConfig(Strict):
    """How long a run waits for each kind of task, counted from when it was sent, and
    how often a task that got no usable answer is sent again before the run fails
    (an embedding that keeps failing ends its cycle without an assessment instead)."""

    check_s: float = Field(default=120.0, gt=0)
    """The model check (the LLM worker resolves the backend and finds the model)."""
    llm_s: float | None = Field(default=None, gt=0)
    """One completion. None: 3 x the ``timeout_s`` of the run's backend's client config
    plus a minute (the worker's retries fit), or 30 minutes when that timeout is off."""
    memory_s: float = Field(default=60.0, gt=0)
    embed_s: float = Field(default=300.0, gt=0)
    """A reflection embedding, a paragraph check or a ``search_memory`` call."""
    retries: int = Field(default=2, ge=0, le=100)
    """Sends of a failed task after the first."""


class DiversityConfig(Strict):
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


class CognitionConfig(Strict):
    """Analysis of operator exchanges (seed 002, issue 17). Off by default: the paper's
    protocol has none.

    ``off``: no analysis. ``heuristic``: the rules of ``cognition.heuristic``, decided in
    the core as the exchange completes. ``model``: one structured-JSON call through the
    LLM worker, a task that does not hold the cycle; the heuristic stands in (named as
    such, with the reason) when the answer is not an analysis or the task keeps failing.
    """

    analysis: Literal["off", "heuristic", "model"] = "off"
    model: Name | None = None
    """The analysis model (None: the run's own model)."""
    temperature: StrictFloat = Field(default=0.1, ge=0.0, le=2.0)
    recent_exchanges: StrictInt = Field(default=5, ge=0, le=50)
    """How many earlier exchanges the context type is judged against."""
    deadline_s: float = Field(default=300.0, gt=0)
    """How long the run waits for one analysis (then it is sent again, within
    ``deadlines.retries``, and finally the heuristic stands in)."""
    memory_policy: StrictBool = False
    """Seed 002's persistent memory: an exchange whose analysis scores above
    ``persistence_threshold`` is stored by the platform under the reserved key prefix
    (``cognition.policy.PERSISTENT_PREFIX``), a logged memory task, before its reply goes
    back to the model: with the policy on, the exchange's analysis (a model's too) and
    that write hold the cycle, so what the agent reads never depends on timing. The
    agent's ``write`` and ``delete`` are refused on the prefix; ``read``, ``list`` and
    ``pattern_search`` see it."""
    persistence_threshold: StrictFloat = Field(default=0.6, ge=0.0, le=1.0)
    """An exchange is kept when its persistence score is strictly above this."""
    memory_block: StrictBool = False
    """A "relevant memories" block in the system prompt: before each cycle the run's
    memory values are ranked against the last reflection by the hybrid retrieval
    (``cognition.retrieval``, in the embedder) and the best ``memory_block_k`` are shown
    after the system prompt for that cycle. What was retrieved is logged
    (``MemoriesRetrieved``), and the prompt is built from the log alone, so it replays
    exactly. Off by default: the paper's protocol has no such block."""
    memory_block_k: StrictInt = Field(default=3, ge=1, le=10)
    """How many memories the block shows at most."""
    heuristic_rules: Literal[1, 2] = 2
    """The heuristic analyser's rules, by version (``cognition.heuristic``): 2 reads a bare
    acknowledgement ("Acknowledged.", the operator's default auto reply, "Noted.",
    "Understood.") as conversation; 1 read it as a statement. Runs recorded before
    ``RunRequested`` version 5 are read with 1, which is how they ran."""


class ToolsConfig(Strict):
    """Tools beyond the paper's six (off by default, to keep the paper's protocol)."""

    search_memory: StrictBool = False
    """Seed 004's ``search_memory(query, k)``: memory values and earlier reflections
    closest in meaning to the query."""
    search_k: StrictInt = Field(default=5, ge=1, le=20)
    """Results when the model does not say how many."""
    added: tuple[AddedTool, ...] = Field(default=(), max_length=MAX_ADDED_TOOLS)
    """Tools defined as data (``config.tool_defs``): offered after the paper's, answered
    by the orchestrator from the call's index alone."""
    self_report: SelfReportConfig | None = None
    """Self-reports on tool calls (``config.tool_defs.SelfReportConfig``); None: off."""

    def offered(self) -> tuple[str, ...]:
        """The names of every tool a run with these settings offers, in order."""
        built_in = BUILT_IN_TOOLS if self.search_memory else BUILT_IN_TOOLS[:-1]
        return (*built_in, *(tool.name for tool in self.added))


class LimitsConfig(Strict):
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


class RunConfig(Strict):
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
    cognition: CognitionConfig = CognitionConfig()
    history: HistoryConfig = HistoryConfig()
    """What prompts carry of a history that outgrows the context (``config.history``)."""
    experiment: str | None = None
    """Name of the experiment this run belongs to (for grouping and comparison); the
    same shape as a run id, since it becomes part of Redis keys."""
    condition: str | None = None
    """The experiment's condition this run belongs to (``conditions:`` of an experiment
    file; see docs/conditions.md): a label, the same shape as a run id."""
    budget: Budget | None = None
    """What the run may spend (tokens, cost, wall time); reached: ``stopped: budget``."""
    prices: dict[str, ModelPrice] | None = Field(default=None, max_length=10_000)
    """The user's price table (model -> per million input/output tokens; the CLI reads
    a file name): a call's cost when the provider gives none (``config/spend.py``)."""

    @property
    def price(self) -> ModelPrice | None:
        """The price of this run's model in the table, if any."""
        return self.price_of(self.model_name)

    @property
    def priced_models(self) -> tuple[str, ...]:
        """The models the run pays for: its own, and the analyses' ``cognition.model``."""
        analyst = self.cognition.model if self.cognition.analysis == "model" else None
        return (self.model_name,) + ((analyst,) if analyst and analyst != self.model_name else ())

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of ``model`` (the run's, the analyses') in the table, if any."""
        return (self.prices or {}).get(model)

    @field_validator("prices", mode="before")
    @classmethod
    def _price_table(cls, value: Any) -> Any:
        return price_table_shape(value)

    def llm_deadline_s(self, backend: Backend | None = None) -> float:
        """One completion's wait on ``backend`` (default: the run's): ``deadlines.llm_s``."""
        if self.deadlines.llm_s is not None:
            return self.deadlines.llm_s
        openai = (backend or self.backend) == "openai"
        timeout = (self.openai_client_config if openai else self.ollama_client_config).timeout_s
        return 3 * timeout + 60 if timeout is not None else 1800.0

    def llm_hosts(self, backend: Backend | None = None) -> tuple[str, ...]:
        """The hosts that may answer this run's LLM calls on ``backend`` (default: the
        configured one). The scripted backend stands in for an Ollama host; ``auto``
        tries the Ollama hosts first."""
        match backend or self.backend:
            case "openai":
                return self.openai_client_config.pool
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
        for url in value.pool:
            if has_credentials(url):
                raise ValueError(CREDENTIALS_FIX)
        return value

    @field_validator("experiment", "condition")
    @classmethod
    def _experiment_shape(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_identifier(str(info.field_name), value)

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
    if config.cognition.memory_policy and config.cognition.analysis == "off":
        return (
            "cognition.memory_policy needs the exchanges' analyses: set cognition.analysis "
            "to heuristic or model"
        )
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
    tools = config.tools
    problem = tools_problem(tools.added, tools.self_report, tools.offered())
    if problem is not None:
        return problem
    if config.backend == "scripted" and config.script is None:
        return "backend 'scripted' needs a 'script' (a file or replies)"
    return None


def parse_run_config(data: Any, *, source: str = "config") -> RunConfig:
    """Validate raw config data, turning pydantic's report into one readable line.

    A new config's natural-repetition patterns must also be matchable in linear time
    (``diversity.linear_regex``): the embedder that checks them serves every run. A
    recorded config is not held to that (its log must keep folding); the embedder
    refuses such a pattern when it checks, failing that run's check alone."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation_error(exc, RunConfig)}") from None
    for pattern in config.diversity.natural_repetition_patterns:
        try:
            compile_linear(pattern)
        except ConfigError as exc:
            raise ConfigError(f"{source}: diversity.natural_repetition_patterns: {exc}") from None
    return config
