"""An experiment's conditions: the grid's third axis (models x conditions x replicas).
Pure.

```yaml
tool_definitions: tools/self-explanations.yaml   # or the list itself (tools: [...])
conditions:
  - label: control
    add_tools: [submit_data, check_status]
  - label: placebo
    add_tools: [submit_data, reset_state]
    descriptions: {reset_state: "..."}           # a tool's words replaced
    system_prompt_file: prompts/placebo.txt      # any run option
```

A condition is a label, the tools it adds from the file's ``tool_definitions`` (by
name), the descriptions it replaces, and any run option (a system prompt or task
text, ``tools.self_report``, ``cycle_count`` ...), which win over the shared and the
per-model ones. Its runs are named ``{experiment}-{label}-{condition}-{replica}`` and
carry ``condition`` in their config, so every view can group by it; what the model
was shown of each tool is in the run's config and hashed in ``RunStarted``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contreact_events.config.tool_defs import AddedTool
from contreact_events.exceptions import ConfigError

if TYPE_CHECKING:
    from contreact_events.config.experiment import ExperimentCondition

CONDITION_LABEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,23}$")
"""No '-': a condition's label stands between the model's label and the replica letter."""
MAX_CONDITIONS = 26


def check_condition_label(value: str) -> str:
    if not CONDITION_LABEL_PATTERN.match(value):
        raise ValueError(
            f"condition label {value[:40]!r} must be 1-24 letters, digits, '.' or '_', "
            "starting with a letter or digit (no '-')"
        )
    return value


def condition_tools(
    label: str,
    add_tools: tuple[str, ...],
    descriptions: dict[str, str],
    definitions: tuple[AddedTool, ...],
    already: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The ``tools.added`` of a condition's runs, as data: the tools the run options
    add already (``already``), then those it picks from the file's definitions, each
    description replaced where the condition says so. ValueError names an unknown
    tool, one line."""
    known = {tool.name: tool for tool in definitions}
    unknown = [name for name in add_tools if name not in known]
    if unknown:
        defined = ", ".join(known) or "none"
        raise ValueError(
            f"conditions.{label}.add_tools names {', '.join(unknown)}, which tool_definitions "
            f"does not define (defined: {defined})"
        )
    picked = [known[name].model_dump(mode="json") for name in add_tools]
    tools = [*already, *picked]
    names = [str(tool.get("name")) for tool in tools]
    strange = [name for name in descriptions if name not in names]
    if strange:
        raise ValueError(
            f"conditions.{label}.descriptions names {', '.join(strange)}, which the condition "
            f"does not add (adds: {', '.join(names) or 'none'})"
        )
    return [
        {**tool, "description": descriptions[str(tool["name"])]}
        if tool.get("name") in descriptions
        else tool
        for tool in tools
    ]


def unique_labels(labels: list[str]) -> list[str]:
    """The labels given twice (a condition named twice would share its runs' ids)."""
    return sorted({label for label in labels if labels.count(label) > 1})


def condition_cells(
    conditions: Sequence[ExperimentCondition],
    definitions: tuple[AddedTool, ...],
    options: dict[str, Any],
    where: str,
) -> list[tuple[str | None, dict[str, Any]]]:
    """A model's options per condition (one cell, None, without conditions): the
    condition's options win; its tools join the ``tools.added`` of the options."""
    if not conditions:
        return [(None, options)]
    cells: list[tuple[str | None, dict[str, Any]]] = []
    for condition in conditions:
        merged = merge(options, condition.options())
        tools = dict(merged.get("tools") or {})
        try:
            tools["added"] = condition_tools(
                condition.label,
                condition.add_tools,
                condition.descriptions,
                definitions,
                list(tools.get("added") or []),
            )
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        cells.append((condition.label, {**merged, "tools": tools}))
    return cells


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` on ``base``, key by key; mappings merge, everything else replaces."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
