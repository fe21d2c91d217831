"""An experiment: models x replicas in one file, expanded into run configs. Pure.

```yaml
experiment: paper-replication      # names the runs: paper-replication-GPT5-A
replicas: 3                        # A, B, C (the paper's variants)
cycle_count: 10                    # any run option here is shared by every model ...
backend: openai
model_options: {seed: 42}
models:
  - label: GPT5
    model_name: openai/gpt-5
    model_options: {temperature: 0.0, top_p: 0.9}   # ... and overridden per model
```

Per-model settings override the shared ones key by key; nested blocks
(``model_options``, ``operator``, ``diversity`` ...) merge the same way. With a
seed, replica A gets it, B the seed + 1, and so on (``replica_seeds: same`` to give
every replica the same seed): replicas are independent samples. Each run
is then validated as a run config is, and named predictably:
``{experiment}-{label}-{replica}``, and ``.{attempt}`` from a run's second attempt
on (a failed or cancelled run keeps its log; its replica runs again under a new id).

Reading the YAML file and resolving the files it names is the CLI's job.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contreact_events.config import (
    Backend,
    CognitionConfig,
    DeadlinesConfig,
    DiversityConfig,
    LimitsConfig,
    ModelOptions,
    OllamaClientConfig,
    OpenAIClientConfig,
    OperatorConfig,
    RunConfig,
    ScriptConfig,
    ToolsConfig,
    describe_validation_error,
    parse_run_config,
)
from contreact_events.config.conditions import (
    MAX_CONDITIONS,
    check_condition_label,
    condition_cells,
    unique_labels,
)
from contreact_events.config.conditions import merge as merge
from contreact_events.config.history import HistoryConfig
from contreact_events.config.run_places import (  # the names an experiment gives its runs
    REPLICA_RUN_ID as REPLICA_RUN_ID,
)
from contreact_events.config.run_places import attempt_run_id as attempt_run_id
from contreact_events.config.run_places import label_and_replica as label_and_replica
from contreact_events.config.run_places import replica_letter as replica_letter
from contreact_events.config.run_places import replica_run_id as replica_run_id
from contreact_events.config.spend import Budget, ModelPrice, price_table_shape
from contreact_events.config.tool_defs import AddedTool, Description, ToolName
from contreact_events.exceptions import ConfigError

EXPERIMENT_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
"""Short enough that every run id they make is valid (48 + 40 + 2 letters + attempt)."""
MAX_REPLICAS = 26 * 27
"""A..Z, then AA..ZZ: two letters at most."""
RUN_ONLY_KEYS = frozenset({"run_id", "model_name", "experiment", "condition"})
"""Run-config keys an experiment sets itself, per run (not run options)."""


class RunOptions(BaseModel):
    """The run options an experiment sets for every model or per model. Unset keys
    take the run config's defaults. (A test keeps this list equal to RunConfig's.)"""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle_count: StrictInt | None = Field(default=None, gt=0, le=100_000)
    ollama_client_config: OllamaClientConfig | None = None
    openai_client_config: OpenAIClientConfig | None = None
    model_options: ModelOptions | None = None
    backend: Backend | None = None
    max_steps_per_cycle: StrictInt | None = Field(default=None, gt=0, le=10_000)
    final_call_at_step_cap: StrictBool | None = None
    operator: OperatorConfig | None = None
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    cycle_start_message: str | None = None
    keep_alive: str | None = None
    script: ScriptConfig | None = None
    diversity: DiversityConfig | None = None
    tools: ToolsConfig | None = None
    deadlines: DeadlinesConfig | None = None
    limits: LimitsConfig | None = None
    cognition: CognitionConfig | None = None
    history: HistoryConfig | None = None
    budget: Budget | None = None
    prices: dict[str, ModelPrice] | None = None

    @field_validator("prices", mode="before")
    @classmethod
    def _price_table(cls, value: Any) -> Any:
        return price_table_shape(value)

    def options(self) -> dict[str, Any]:
        """The run options that were set, as data (nested blocks: their set keys)."""
        return self.model_dump(
            mode="json", exclude_unset=True, include=set(RunOptions.model_fields)
        )


class ExperimentModel(RunOptions):
    """One model of an experiment, with its own replicas and option overrides."""

    model_name: str = Field(min_length=1)
    label: str | None = None
    """Names its runs (default: the model name, made safe for a run id)."""
    replicas: int | None = Field(default=None, ge=1, le=MAX_REPLICAS)

    @field_validator("label")
    @classmethod
    def _label_shape(cls, value: str | None) -> str | None:
        if value is not None and not LABEL_PATTERN.match(value):
            raise ValueError(
                "label must be 1-40 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        return value

    @property
    def name(self) -> str:
        return self.label or default_label(self.model_name)


class ForkSection(BaseModel):
    """``fork:``: every replica of the ``from`` models (default: all), once it has ended
    cycle ``at_cycle``, is forked to each of the ``to`` models (default: every other
    one), which runs the cycles after it up to ``cycle_count`` (the paper's model swap,
    made general). A fork runs under the target model's own settings; a model is never
    forked to itself. An empty or repeated list is refused (a repeated label asked for
    the same fork twice, which ``experiment run`` could never settle)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    at_cycle: StrictInt = Field(gt=0, le=100_000)
    cycle_count: StrictInt = Field(gt=0, le=100_000)
    """The forks' ``cycle_count``: above ``at_cycle``."""
    from_labels: tuple[str, ...] | None = Field(default=None, alias="from")
    to: tuple[str, ...] | None = None

    @field_validator("from_labels", "to")
    @classmethod
    def _labels(cls, value: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        key = "from" if info.field_name == "from_labels" else "to"
        if value is None:
            return value
        if not value:
            _refuse(f"fork.{key} is empty: leave it out to {FORK_DEFAULTS[key]}, or name a label")
        twice = sorted({label for label in value if value.count(label) > 1})
        if twice:
            _refuse(f"fork.{key} names {', '.join(twice)} twice: name each model once")
        return value


FORK_DEFAULTS = {"from": "fork every model's replicas", "to": "fork to every other model"}


def _refuse(problem: str) -> NoReturn:
    raise ValueError(problem)


class ExperimentCondition(RunOptions):
    """One condition of the grid (``config.conditions``): a label, the tools it adds
    from ``tool_definitions``, the descriptions it replaces, and run options of its own."""

    label: str
    add_tools: tuple[ToolName, ...] = ()
    descriptions: dict[ToolName, Description] = Field(default_factory=dict)

    @field_validator("label")
    @classmethod
    def _label_shape(cls, value: str) -> str:
        return check_condition_label(value)


class ExperimentConfig(RunOptions):
    experiment: str
    description: str = ""
    replicas: int = Field(default=3, ge=1, le=MAX_REPLICAS)
    """Runs per model (the paper: 3, variants A, B, C)."""
    replica_seeds: Literal["offset", "same"] = "offset"
    """With a ``model_options.seed``: replica A runs with it, B with seed + 1, and so on,
    so replicas are independent samples (``same``: every replica gets the seed)."""
    models: tuple[ExperimentModel, ...] = Field(min_length=1)
    fork: ForkSection | None = None
    """Forks of the replicas at a cycle, to the other models (see ``ForkSection``)."""
    tool_definitions: tuple[AddedTool, ...] = Field(default=(), max_length=100)
    """Tools the conditions may add by name (the CLI reads a file name into the list)."""
    conditions: tuple[ExperimentCondition, ...] = Field(default=(), max_length=MAX_CONDITIONS)
    """The grid's third axis (``config.conditions``); none: models x replicas."""
    experiment_budget: Budget | None = None
    """What the whole experiment may spend: once its runs' spend reaches it, ``experiment
    run`` starts no more runs (``budget`` is each run's own)."""
    parallel: int | None = Field(default=None, ge=1, le=10_000)
    """At most this many of its runs going at once (None: all at once); the others are
    started as runs end, while the experiment's budget allows."""

    @field_validator("experiment")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not EXPERIMENT_NAME_PATTERN.match(value):
            raise ValueError(
                "experiment must be 1-48 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _conditions_once(self) -> ExperimentConfig:
        twice = unique_labels([condition.label for condition in self.conditions])
        if twice:
            _refuse(f"conditions: {', '.join(twice)} named twice: give each condition a label")
        if self.conditions and self.fork is not None:
            _refuse("fork: an experiment with conditions takes no fork section (not yet)")
        return self

    @model_validator(mode="after")
    def _forks_made(self) -> ExperimentConfig:
        """A ``fork`` section that names no model of the experiment, or makes no fork,
        is refused: it would fork nothing, silently."""
        section = self.fork
        if section is None:
            return self
        labels = [model.name for model in self.models]
        if len(labels) < 2:
            _refuse(
                f"fork: the experiment has one model ({labels[0]}) and a fork goes to another "
                "model: add a model, or remove the fork section"
            )
        named = {*(section.from_labels or ()), *(section.to or ())}
        if not named <= set(labels):
            return self  # the fork plan names the unknown label (core.experiment_forks)
        sources, targets = section.from_labels or labels, section.to or labels
        if not any(target != source for source in sources for target in targets):
            _refuse(
                f"fork: from [{', '.join(sources)}] to [{', '.join(targets)}] makes no fork "
                "(a model is never forked to itself): name other models in 'to'"
            )
        return self


@dataclass(frozen=True)
class PlannedRun:
    """One replica of one model: what to run (its first attempt's config)."""

    replica: str
    """``{label}-{letter}``: the replica's name within the experiment (with conditions,
    the label is ``{model label}-{condition}``)."""
    label: str
    letter: str
    config: RunConfig
    condition: str | None = None

    @property
    def config_sha256(self) -> str:
        """What the replica runs, its run id left out (it changes between attempts)."""
        return config_sha256(self.config)

    def attempt(self, number: int) -> RunConfig:
        """The config of the replica's ``number``-th attempt (its run id)."""
        run_id = attempt_run_id(self.config.run_id, number)
        return self.config.model_copy(update={"run_id": run_id})


def config_sha256(config: RunConfig) -> str:
    data = config.model_dump(mode="json", exclude={"run_id"})
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def default_label(model_name: str) -> str:
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name).strip("-._")[:40].strip("-._")
    return label or "model"


def parse_experiment(data: Any, *, source: str = "experiment") -> ExperimentConfig:
    """Validate an experiment file's data, with one readable line per problem."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    if "run_id" in data:
        raise ConfigError(
            f"{source}: 'run_id' is set per run by the experiment (its runs are named "
            "EXPERIMENT-LABEL-REPLICA): remove it"
        )
    if "model_name" in data:
        raise ConfigError(
            f"{source}: 'model_name' belongs to each entry of 'models' "
            "(models: [{model_name: ..., label: ...}])"
        )
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation_error(exc, ExperimentConfig)}") from None


def expand(experiment: ExperimentConfig, *, source: str = "experiment") -> list[PlannedRun]:
    """Every run of the experiment: each model's replicas, options merged, validated."""
    shared = experiment.options()
    labels: dict[str, str] = {}
    runs: list[PlannedRun] = []
    for index, model in enumerate(experiment.models):
        label = model.name
        where = f"{source}: models[{index}] ({label})"
        if label in labels:
            raise ConfigError(
                f"{where}: label '{label}' is taken by {labels[label]}: give one a 'label'"
            )
        labels[label] = model.model_name
        options = merge(shared, model.options())
        cells = condition_cells(experiment.conditions, experiment.tool_definitions, options, where)
        for condition, cell_options in cells:
            cell = label if condition is None else f"{label}-{condition}"
            for number in range(model.replicas or experiment.replicas):
                letter = replica_letter(number)
                data = {
                    **cell_options,
                    "run_id": replica_run_id(experiment.experiment, cell, letter),
                    "model_name": model.model_name,
                    "experiment": experiment.experiment,
                }
                if condition is not None:
                    data["condition"] = condition
                seed = cell_options.get("model_options", {}).get("seed")
                if isinstance(seed, int) and experiment.replica_seeds == "offset":
                    data["model_options"] = {**cell_options["model_options"], "seed": seed + number}
                config = parse_run_config(data, source=where)
                runs.append(PlannedRun(f"{cell}-{letter}", cell, letter, config, condition))
    return runs
