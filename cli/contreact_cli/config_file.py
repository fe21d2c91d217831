"""Reading a run config file (seed 003's YAML format as is, plus the extensions) or
an experiment file (models x replicas).

Paths in the file (``system_prompt_file``, a ``script`` or ``prices`` given as a file
name) are
resolved against the file's folder and their contents put into the config, so the
run's snapshot holds everything it ran with.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from contreact_events.config import RunConfig, parse_run_config
from contreact_events.config.experiment import (
    ExperimentConfig,
    PlannedRun,
    expand,
    parse_experiment,
)
from contreact_events.config.strict_yaml import DuplicateKeyError, load_yaml
from contreact_events.exceptions import ConfigError


def load_config(path: Path, *, run_id: str | None = None) -> RunConfig:
    return _run_config(_read_mapping(path, what="config file"), path, run_id)


def load_experiment(path: Path) -> tuple[ExperimentConfig, list[PlannedRun]]:
    """An experiment file and every run it calls for (validated, files read in)."""
    return _experiment(_read_mapping(path, what="experiment file"), path)


def load_run_configs(path: Path) -> list[RunConfig]:
    """What a file calls for, whichever kind it is: a run config's one run, or every
    run of an experiment file (told apart by its ``models`` list)."""
    data = _read_mapping(path, what="config or experiment file")
    if "models" in data:
        return [run.config for run in _experiment(data, path)[1]]
    return [_run_config(data, path, None)]


def _run_config(data: dict[str, Any], path: Path, run_id: str | None) -> RunConfig:
    if "models" in data:
        raise ConfigError(
            f"{path} is an experiment file (it lists 'models'): run it with "
            f"`contreact experiment run {path}`"
        )
    if run_id:
        data["run_id"] = run_id
    elif not data.get("run_id"):
        data["run_id"] = default_run_id(str(data.get("model_name") or "run"))
    return parse_run_config(resolve_files(data, path), source=str(path))


def _experiment(data: dict[str, Any], path: Path) -> tuple[ExperimentConfig, list[PlannedRun]]:
    if "models" not in data and "model_name" in data:
        raise ConfigError(
            f"{path} is a run config (one 'model_name', no 'models' list): run it with "
            f"`contreact run {path}`"
        )
    data = resolve_files(data, path)
    models = data.get("models")
    if isinstance(models, list):
        data["models"] = [
            resolve_files(entry, path) if isinstance(entry, dict) else entry for entry in models
        ]
    conditions = data.get("conditions")
    if isinstance(conditions, list):
        data["conditions"] = [
            resolve_files(entry, path) if isinstance(entry, dict) else entry for entry in conditions
        ]
    definitions = data.get("tool_definitions")
    if isinstance(definitions, str):
        loaded = _read_yaml(_resolve(path, definitions), what="tool_definitions file")
        if not isinstance(loaded, dict) or not isinstance(loaded.get("tools"), list):
            raise ConfigError(
                f"{path}: tool_definitions file {definitions} must hold a 'tools' list"
            )
        data["tool_definitions"] = loaded["tools"]
    experiment = parse_experiment(data, source=str(path))
    return experiment, expand(experiment, source=str(path))


def resolve_files(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Put the contents of the files a config names (``system_prompt_file``, a
    ``script`` given as a file name, relative to ``path``'s folder) into it."""
    data = dict(data)
    prompt_file = data.get("system_prompt_file")
    if prompt_file and not data.get("system_prompt"):
        prompt_path = _resolve(path, prompt_file)
        if not prompt_path.is_file():
            raise ConfigError(f"{path}: system_prompt_file {prompt_path} does not exist")
        data["system_prompt"] = prompt_path.read_text(encoding="utf-8")
        data["system_prompt_file"] = str(prompt_path)
    prices = data.get("prices")
    if isinstance(prices, str):
        table = _read_yaml(_resolve(path, prices), what="price table")
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: price table {_resolve(path, prices)} is not a table: write "
                "one 'MODEL: {input: N, output: N}' line per model (per million tokens)"
            )
        data["prices"] = table
    script = data.get("script")
    if isinstance(script, str):
        script_path = _resolve(path, script)
        loaded = _read_yaml(script_path, what="script file")
        data["script"] = {"replies": loaded} if isinstance(loaded, list) else loaded
    return data


def default_run_id(model_name: str) -> str:
    """``MODEL-YYYYmmdd-HHMMSS-xxxxxx``: the time to read, six random hex digits so that
    two runs of a model submitted in the same second do not collide (an experiment's
    runs get predictable ids instead)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name).strip("-._") or "run"
    return f"{stem[:80]}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _resolve(config_path: Path, name: Any) -> Path:
    candidate = Path(str(name)).expanduser()
    return candidate if candidate.is_absolute() else config_path.parent / candidate


def _read_mapping(path: Path, *, what: str) -> dict[str, Any]:
    data = _read_yaml(path, what=what)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    return data


def _read_yaml(path: Path, *, what: str) -> Any:
    if not path.exists():
        raise ConfigError(f"{what} not found: {path}")
    if not path.is_file():
        raise ConfigError(f"{what} {path} is not a file")
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path} is not UTF-8 text") from None
    except DuplicateKeyError as exc:
        raise ConfigError(f"{what} {path}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{what} {path} is not valid YAML{where}: {problem}") from None
