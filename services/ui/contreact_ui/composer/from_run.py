"""The composer opened on an existing run ("start from a run"): the run's config as
submitted (its ``RunRequested``), as the form's values. Pure.

Every setting lands somewhere: in its own field when the form has one (deadlines and
limits included), else as a ``key=value`` line of "More settings", the syntax of
``fork --set`` (``contreact_events.config.overrides``). Settings at their default are
left out of those lines, so the form shows what the run chose. Every value is in a
form a page shows unchanged (``text.display`` neutralizes control and bidi
characters: a value holding them goes in a line, escaped), so the form sends the
config back as it was. The run id is left empty: the new run needs its own
(``contreact run`` makes one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from contreact_events.config import RunConfig
from contreact_events.config.overrides import setting_paths
from contreact_ui.composer.form import COMPOSERS, SETTINGS, SUBMITTED, FormField
from contreact_ui.text import display

LEFT_OUT = frozenset({"run_id"})
"""Settings a new run does not take over."""


def run_form_values(config: RunConfig) -> dict[str, str]:
    """The run composer's form values that compose ``config`` again (run id aside)."""
    fields = {f.name: f for f in COMPOSERS["run"].fields if f.name != SETTINGS}
    data = config.model_dump(mode="json")
    defaults = RunConfig(run_id=config.run_id, model_name=config.model_name, cycle_count=1)
    default_data = defaults.model_dump(mode="json")
    values: dict[str, str] = {SUBMITTED: "1"}
    lines = []
    for name, field in fields.items():
        shown = "" if name in LEFT_OUT else _shown(field, _get(data, field.path))
        if shown is None:  # a value the field cannot show: a "More settings" line
            lines.append(setting_line(name, _get(data, field.path)))
        if field.kind == "checkbox" and not shown:
            continue  # an unticked box is not sent
        values[name] = shown or ""
    paths = setting_paths()
    for key in paths:
        if key in LEFT_OUT or key in fields or any(key.startswith(f"{n}.") for n in fields):
            continue
        if any(p.startswith(f"{key}.") for p in paths):
            continue  # a section: its leaves are listed one by one
        path = tuple(key.split("."))
        value = _get(data, path)
        if value != _get(default_data, path):
            lines.append(setting_line(key, value))
    values[SETTINGS] = "\n".join(lines)
    return values


def setting_line(key: str, value: Any) -> str:
    """``key=value`` on one line: the value as JSON, which YAML reads as it is (a text
    with line breaks or quotes stays one line, escaped; with characters a page would
    neutralize, control or bidi, as ``\\u`` escapes, so the form sends them back)."""
    line = f"{key}={json.dumps(value, ensure_ascii=False)}"
    return line if display(line) == line else f"{key}={json.dumps(value)}"


def _shown(field: FormField, value: Any) -> str | None:
    """The value as the field shows it; None when the field cannot show it."""
    if field.kind == "checkbox":
        return "on" if value else ""
    if value is None:  # empty: the default, unless null means more (a cap switched off)
        return None if field.name.startswith("limits.") else ""
    if field.kind == "textarea":
        text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
        if display(text) != text:  # escaped: ASCII, which a page shows as it is
            text = yaml.safe_dump(value, sort_keys=False, allow_unicode=False)
        return text
    if field.kind == "select" and str(value) not in field.options:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    shown = str(value)
    return shown if display(shown) == shown else None  # a page would change it: a line


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node
