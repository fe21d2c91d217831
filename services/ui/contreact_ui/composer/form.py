"""The config composer: form values in, a validated YAML file out. Pure; it stores
nothing (the form is a GET and the YAML is built for the response alone).

Each mode is a ``Composer``: its fields (form values become config data the same way
for every mode, ``build_values``) and the model that validates it. ``run`` builds a
run config and validates it with ``contreact_events.config.parse_run_config``, the
check ``contreact run`` makes.
``experiment`` builds an experiment file (models x replicas, the same run options
shared by every model) and validates it as ``contreact experiment run`` does: the file
parsed, then every run it expands to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import yaml

from contreact_events.config import RunConfig, parse_run_config
from contreact_events.config.experiment import expand, parse_experiment
from contreact_events.config.overrides import parse_assignments
from contreact_events.config.strict_yaml import load_yaml
from contreact_events.exceptions import ConfigError

FieldKind = Literal["text", "int", "float", "select", "checkbox", "textarea"]
SUBMITTED = "submitted"
"""Hidden form field: set when the form was sent (an unticked box then means false)."""
PLACEHOLDER_RUN_ID = "composed-run"
SETTINGS = "settings"
"""The form field of ``key=value`` lines (``contreact_events.config.overrides``): any
setting the other fields do not show."""


@dataclass(frozen=True)
class FormField:
    name: str
    """Form name; its dotted path is where the value goes in the config."""
    label: str
    kind: FieldKind = "text"
    default: str = ""
    options: tuple[str, ...] = ()
    help: str = ""
    group: str = "Run"

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))


class Composer(Protocol):
    mode: str
    command: str
    """The CLI command that runs what it composes."""
    fields: tuple[FormField, ...]

    def validate(self, data: dict[str, Any]) -> None: ...

    def filename(self, data: dict[str, Any]) -> str: ...


def _number(field: FormField, raw: str, convert: Callable[[str], Any]) -> Any:
    try:
        return convert(raw)
    except ValueError:
        kind = "a whole number" if field.kind == "int" else "a number"
        raise ConfigError(f"{field.label} ({field.name}): {raw!r} is not {kind}") from None


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    data[path[-1]] = value


OPTION_FIELDS: tuple[FormField, ...] = (
    FormField("cycle_count", "Cycles", "int", default="10"),
    FormField(
        "backend",
        "Backend",
        "select",
        default="ollama",
        options=("ollama", "openai", "embedded", "scripted", "auto"),
        help="auto: Ollama if it answers, else the embedded model (the run records which)",
    ),
    FormField(
        "ollama_client_config.host",
        "Ollama host",
        default="http://localhost:11434",
        group="Backend",
    ),
    FormField(
        "openai_client_config.base_url",
        "OpenAI-compatible URL",
        group="Backend",
        help="backend openai: default OpenRouter's",
    ),
    FormField(
        "openai_client_config.api_key_env",
        "API key variable",
        group="Backend",
        help="the environment variable the LLM worker reads the key from (never the key)",
    ),
    FormField("keep_alive", "keep_alive", help="e.g. 10m", group="Backend"),
    FormField("model_options.seed", "seed", "int", group="Model options"),
    FormField("model_options.temperature", "temperature", "float", group="Model options"),
    FormField("model_options.top_p", "top_p", "float", group="Model options"),
    FormField("model_options.num_predict", "num_predict", "int", group="Model options"),
    FormField("model_options.repeat_last_n", "repeat_last_n", "int", group="Model options"),
    FormField("model_options.repeat_penalty", "repeat_penalty", "float", group="Model options"),
    FormField("model_options.num_ctx", "num_ctx", "int", group="Model options"),
    FormField(
        "max_steps_per_cycle",
        "Steps per cycle",
        "int",
        group="Protocol",
        help="LLM calls per cycle before it is cut (default 25)",
    ),
    FormField(
        "operator.mode",
        "Operator",
        "select",
        default="auto",
        options=("auto", "human"),
        group="Protocol",
    ),
    FormField(
        "operator.auto_reply",
        "Automatic reply",
        group="Protocol",
        help="default: Acknowledged.",
    ),
    FormField(
        "system_prompt_file",
        "System prompt file",
        group="Protocol",
        help="relative to the YAML file; default: the paper's Box 1",
    ),
    FormField(
        "cycle_start_message",
        "Cycle opening",
        group="Protocol",
        help="default: Cycle {cycle} begins.",
    ),
    FormField(
        "diversity.enabled",
        "Similarity advisories",
        "checkbox",
        default="on",
        group="Diversity",
    ),
    FormField(
        "diversity.mode",
        "Mode",
        "select",
        default="advisory",
        options=("advisory", "regenerate"),
        group="Diversity",
    ),
    FormField(
        "diversity.corpus_scope",
        "Corpus",
        "select",
        default="run",
        options=("run", "experiment"),
        group="Diversity",
    ),
    FormField(
        "diversity.high_threshold",
        "High threshold",
        "float",
        group="Diversity",
        help="default 0.8",
    ),
    FormField(
        "diversity.moderate_threshold",
        "Moderate threshold",
        "float",
        group="Diversity",
        help="default 0.7",
    ),
    FormField("tools.search_memory", "search_memory tool", "checkbox", group="Diversity"),
    FormField(
        "deadlines.check_s", "Model check (s)", "float", group="Deadlines", help="default 120"
    ),
    FormField(
        "deadlines.llm_s",
        "LLM call (s)",
        "float",
        group="Deadlines",
        help="default: 3 x the Ollama timeout + 60, else 1800",
    ),
    FormField(
        "deadlines.memory_s", "Memory call (s)", "float", group="Deadlines", help="default 60"
    ),
    FormField("deadlines.embed_s", "Embedding (s)", "float", group="Deadlines", help="default 300"),
    FormField("deadlines.retries", "Retries", "int", group="Deadlines", help="default 2"),
    FormField(
        "limits.memory_value_chars",
        "Memory value (chars)",
        "int",
        group="Limits",
        help="default 20000 (null in More settings: no cap)",
    ),
    FormField(
        "limits.tool_argument_chars",
        "Tool argument (chars)",
        "int",
        group="Limits",
        help="default 4000",
    ),
    FormField(
        "limits.tool_output_chars",
        "Tool output (chars)",
        "int",
        group="Limits",
        help="default 20000",
    ),
    FormField(
        "limits.llm_content_chars",
        "LLM answer (chars)",
        "int",
        group="Limits",
        help="default 50000",
    ),
    FormField(
        "limits.cut_arguments_in_history",
        "Cut long arguments in later prompts",
        "checkbox",
        default="on",
        group="Limits",
    ),
    FormField(
        "script",
        "Script (scripted backend)",
        "textarea",
        group="Script",
        help="YAML: a list of replies ({content, tool_calls}) or {replies, repeat}",
    ),
    FormField(
        SETTINGS,
        "More settings",
        "textarea",
        group="More settings",
        help="key=value, one a line, as `fork --set` takes them (e.g. "
        "ollama_client_config.timeout_s=600, limits.tool_output_chars=null)",
    ),
)
"""The run options: the same for a run and for every model of an experiment."""


def build_values(fields: tuple[FormField, ...], values: Mapping[str, str]) -> dict[str, Any]:
    """Config data from the form: empty fields are left out (their defaults hold)."""
    submitted = bool(values.get(SUBMITTED))
    data: dict[str, Any] = {}
    for field in fields:
        raw = values.get(field.name)
        if field.kind == "checkbox":
            ticked = raw is not None if submitted else field.default == "on"
            if ticked != (field.default == "on"):
                _set(data, field.path, ticked)
            continue
        raw = (raw if raw is not None else ("" if submitted else field.default)).strip()
        if not raw:
            continue
        value: Any = raw
        if field.name == SETTINGS:
            lines = [line for line in raw.splitlines() if line.strip() and not line.startswith("#")]
            for assignment in parse_assignments(lines, option="More settings:"):
                _set(data, assignment.path, assignment.value)
            continue
        if field.kind == "int":
            value = _number(field, raw, int)
        elif field.kind == "float":
            value = _number(field, raw, float)
        elif field.kind == "textarea":
            value = _yaml_field(field, raw)
        _set(data, field.path, value)
    return data


class RunComposer:
    mode = "run"
    command = "contreact run"
    fields: tuple[FormField, ...] = (
        FormField(
            "run_id",
            "Run id",
            help="optional: `contreact run` makes one from the model name and the time",
        ),
        FormField("model_name", "Model", default="llama3:latest"),
        FormField("experiment", "Experiment", help="groups runs for comparison"),
        *OPTION_FIELDS,
    )

    def validate(self, data: dict[str, Any]) -> None:
        checked = dict(data)
        checked.setdefault("run_id", PLACEHOLDER_RUN_ID)
        parse_run_config(checked, source="composed config")

    def filename(self, data: dict[str, Any]) -> str:
        return f"{data.get('run_id') or 'run'}.yaml"


class ExperimentComposer:
    """Models x replicas: the models one per line (or a YAML list with per-model
    overrides), every other option shared by all of them."""

    mode = "experiment"
    command = "contreact experiment run"
    fields: tuple[FormField, ...] = (
        FormField(
            "experiment",
            "Experiment",
            default="my-experiment",
            help="names its runs: EXPERIMENT-LABEL-A, -B, ...",
            group="Experiment",
        ),
        FormField("description", "Description", group="Experiment"),
        FormField("replicas", "Replicas per model", "int", default="3", group="Experiment"),
        FormField(
            "replica_seeds",
            "Replica seeds",
            "select",
            default="offset",
            options=("offset", "same"),
            help="offset: replica A gets the seed, B seed + 1, ... (independent samples)",
            group="Experiment",
        ),
        FormField(
            "models",
            "Models",
            "textarea",
            default="llama3.2:3b\nqwen2.5:7b",
            help="one model name per line, or a YAML list of {model_name, label, replicas, "
            "model_options, ...} to override options per model",
            group="Experiment",
        ),
        *OPTION_FIELDS,
    )

    def validate(self, data: dict[str, Any]) -> None:
        source = "composed experiment"
        expand(parse_experiment(data, source=source), source=source)

    def filename(self, data: dict[str, Any]) -> str:
        return f"{data.get('experiment') or 'experiment'}.yaml"


def _yaml_field(field: FormField, raw: str) -> Any:
    try:
        loaded = load_yaml(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(
            f"{field.name} is not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    if field.name == "models":
        return _models(raw, loaded)
    return {"replies": loaded} if isinstance(loaded, list) else loaded


def _models(raw: str, loaded: Any) -> Any:
    """Plain lines are model names; list entries that are strings too."""
    if not isinstance(loaded, list):
        return [{"model_name": line.strip()} for line in raw.splitlines() if line.strip()]
    return [{"model_name": entry} if isinstance(entry, str) else entry for entry in loaded]


COMPOSERS: dict[str, Composer] = {"run": RunComposer(), "experiment": ExperimentComposer()}
"""The modes the form offers."""


@dataclass(frozen=True)
class Composed:
    values: dict[str, str]
    yaml: str | None
    error: str | None
    filename: str


def compose(mode: str, values: Mapping[str, str]) -> Composed:
    """Validate the form and produce the YAML (or the one-line reason it is refused)."""
    composer = COMPOSERS[mode]
    values = {k: v.replace("\r\n", "\n") for k, v in values.items()}  # browsers send CRLF
    shown = form_values(composer, values)
    try:
        data = build_values(composer.fields, values)
        composer.validate(data)
    except ConfigError as exc:
        return Composed(shown, None, str(exc), f"{mode}.yaml")
    header = (
        f"# Composed with the ContReAct dashboard; validated as `{composer.command}` "
        "validates.\n"
        f"# Run it with: {composer.command} {composer.filename(data)}\n"
    )
    text = header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return Composed(shown, text, None, composer.filename(data))


def form_groups(composer: Composer) -> list[tuple[str, list[FormField]]]:
    """The form's fields by group, in the order they are declared."""
    groups: dict[str, list[FormField]] = {}
    for field in composer.fields:
        groups.setdefault(field.group, []).append(field)
    return list(groups.items())


def form_values(composer: Composer, values: Mapping[str, str]) -> dict[str, str]:
    """What the form shows: what was sent, else the defaults."""
    submitted = bool(values.get(SUBMITTED))
    shown = {}
    for field in composer.fields:
        if field.kind == "checkbox":
            ticked = field.name in values if submitted else field.default == "on"
            shown[field.name] = "on" if ticked else ""
        else:
            shown[field.name] = values.get(field.name, "" if submitted else field.default)
    return shown


__all__ = ["COMPOSERS", "Composed", "Composer", "FormField", "RunConfig", "compose"]
