"""``key=value`` settings on the command line: one syntax for ``fork --set``,
``replay --what-if`` and the composer's "start from a run".

A key is a dotted path into the run config (``diversity.moderate_threshold``,
``max_steps_per_cycle``, ``operator.mode``); a value is one YAML scalar or flow
collection (``0.75``, ``true``, ``human``, ``[a, b]``), so it has the type a config file
would give it (``10`` is a number, ``"10"`` a text). The changed config is validated as
a whole by ``RunConfig``: a wrong value is refused by the same one-line message a bad
config file gets. A key that is not a setting is refused by name, with the nearest
settings that exist.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel

from contreact_events.config import RunConfig, ToolsConfig, parse_run_config
from contreact_events.config.strict_yaml import load_yaml
from contreact_events.exceptions import ConfigError

__all__ = [
    "Assignment",
    "apply_assignments",
    "changed_settings",
    "parse_assignments",
    "setting_paths",
]


@dataclass(frozen=True)
class Assignment:
    """One ``key=value``: the dotted path and the parsed value."""

    key: str
    value: Any

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.key.split("."))

    def __str__(self) -> str:
        return f"{self.key}={_shown(self.value)}"


def setting_paths(model: type[BaseModel] = RunConfig) -> tuple[str, ...]:
    """Every dotted path a ``key=value`` may name: leaves and whole sections."""
    paths: list[str] = []
    for name, field in model.model_fields.items():
        paths.append(name)
        for section in _sections(field.annotation):
            paths.extend(f"{name}.{sub}" for sub in setting_paths(section))
    return tuple(dict.fromkeys(paths))


def parse_assignments(pairs: Iterable[str], *, option: str = "--set") -> tuple[Assignment, ...]:
    """``key=value`` texts as assignments. ConfigError names the bad pair and the fix:
    no ``=``, an unknown key, a value that is not YAML, a key given twice."""
    known = setting_paths()
    seen: dict[str, str] = {}
    out: list[Assignment] = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"{option} {pair!r}: expected key=value (for example "
                f"{option} diversity.moderate_threshold=0.75)"
            )
        if key not in known and not tool_description_key(key):
            near = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise ConfigError(f"{option} {pair!r}: {key!r} is not a run setting{hint}")
        if key in seen:
            raise ConfigError(f"{option}: {key!r} is given twice ({seen[key]!r} and {pair!r})")
        seen[key] = pair
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(
                f"{option} {pair!r}: the value is not valid YAML ({problem}); quote a text "
                f"that holds ':' or '#'"
            ) from None
        out.append(Assignment(key, value))
    return tuple(out)


def apply_assignments(
    config: RunConfig, assignments: Iterable[Assignment], *, source: str = "--set"
) -> RunConfig:
    """``config`` with each assignment applied, validated as a whole (ConfigError with
    pydantic's report as one line, prefixed by ``source``)."""
    data = config.model_dump(mode="json")
    for assignment in assignments:
        tool = tool_description_key(assignment.key)
        if tool:
            _put_description(data, tool, assignment.value, source)
        else:
            _put(data, assignment.path, assignment.value)
    return parse_run_config(data, source=source)


def tool_description_key(key: str) -> str:
    """The tool a ``tools.NAME.description`` key names (a framing-only change of a tool
    added as data, ``config.tool_defs``), or "" for any other key."""
    parts = key.split(".")
    if len(parts) != 3 or parts[0] != "tools" or parts[2] != "description":
        return ""
    return "" if parts[1] in ToolsConfig.model_fields else parts[1]


def _put_description(data: dict[str, Any], tool: str, value: Any, source: str) -> None:
    added = data.get("tools", {}).get("added", [])
    entry = next((t for t in added if t.get("name") == tool), None)
    if entry is None:
        names = ", ".join(str(t.get("name")) for t in added) or "none"
        raise ConfigError(
            f"{source} tools.{tool}.description: the run adds no tool named {tool} "
            f"(tools added as data: {names})"
        )
    if not isinstance(value, str):
        raise ConfigError(f"{source} tools.{tool}.description: give a text (quote it)")
    entry["description"] = value


def changed_settings(before: RunConfig, after: RunConfig) -> dict[str, tuple[Any, Any]]:
    """The leaves that differ between two configs, by dotted path: ``(before, after)``."""
    out: dict[str, tuple[Any, Any]] = {}
    _diff(before.model_dump(mode="json"), after.model_dump(mode="json"), (), out)
    return out


def _put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value


def _diff(before: Any, after: Any, path: tuple[str, ...], out: dict[str, tuple[Any, Any]]) -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in dict.fromkeys([*before, *after]):
            _diff(before.get(key), after.get(key), (*path, key), out)
    elif before != after:
        out[".".join(path)] = (before, after)


def _sections(annotation: Any) -> list[type[BaseModel]]:
    """The config sections (nested models) an annotation admits (``X | None`` too)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    args = getattr(annotation, "__args__", ())
    return [arg for arg in args if isinstance(arg, type) and issubclass(arg, BaseModel)]


def _shown(value: Any) -> str:
    return (
        yaml.safe_dump(value, default_flow_style=True, width=10_000)
        .strip()
        .removesuffix("\n...")
        .removesuffix(" ...")
    )
