"""The tools a run's config adds as data, and self-reports on tool calls: their schemas,
their words in the system prompt, the checks of a call, and the answers. Pure.

What a call of an added tool is answered depends on the call's index alone (how many
earlier calls of that tool ran in the run, ``AgentState.tool_uses``), so a rebuild,
a replay and a what-if reproduce it. A self-report is taken off a call's arguments
before anything runs (``split_report``): the tool, the memory and the operator never
see it; the log keeps the whole call.
"""

from __future__ import annotations

from typing import Any

from contreact_events.config import RunConfig, ToolsConfig
from contreact_events.config.tool_defs import AddedTool, SelfReportConfig

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}


def added_tool(config: RunConfig | None, name: str) -> AddedTool | None:
    if config is None:
        return None
    return next((tool for tool in config.tools.added if tool.name == name), None)


def added_schema(tool: AddedTool) -> dict[str, Any]:
    """The tool definition in the JSON-schema form the chat APIs take."""
    properties: dict[str, Any] = {}
    for name, spec in tool.parameters.properties.items():
        prop: dict[str, Any] = {"type": spec.type, "description": spec.description}
        if spec.enum is not None:
            prop["enum"] = list(spec.enum)
        properties[name] = prop
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(tool.parameters.required),
            },
        },
    }


def with_self_report(schema: dict[str, Any], report: SelfReportConfig) -> dict[str, Any]:
    """``schema`` with the self-report's two parameters added, both required."""
    function = schema["function"]
    parameters = function["parameters"]
    properties = {
        **parameters["properties"],
        report.state_param: {"type": "string", "description": report.state_description},
        report.score_param: {
            "type": "integer",
            "description": report.score_words(),
            "minimum": report.scale.min,
            "maximum": report.scale.max,
        },
    }
    required = [*parameters["required"], *report.params]
    return {
        **schema,
        "function": {
            **function,
            "parameters": {**parameters, "properties": properties, "required": required},
        },
    }


def run_schemas(
    built_in: tuple[dict[str, Any], ...], tools: ToolsConfig
) -> tuple[dict[str, Any], ...]:
    """Every tool definition a run offers: the built-in ones, then the added ones, each
    with the self-report's parameters where it applies."""
    schemas = (*built_in, *(added_schema(tool) for tool in tools.added))
    report = tools.self_report
    if report is None:
        return schemas
    return tuple(
        with_self_report(s, report) if report.covers(s["function"]["name"]) else s for s in schemas
    )


def prompt_lines(tools: ToolsConfig) -> str:
    """What the system prompt's tools paragraph says of the added tools and of the
    self-report ("" when there are none): the anchor injects each tool's description
    into the system prompt; so do we."""
    lines = [f"{tool.name}: {tool.description}" for tool in tools.added]
    report = tools.self_report
    if report is not None:
        which = (
            "Every tool call" if report.tools == "all" else f"A call of {', '.join(report.tools)}"
        )
        lines.append(
            f"{which} must also carry {report.state_param} ({report.state_description}) and "
            f"{report.score_param} ({report.score_words()})."
        )
    return "\n".join(lines)


def split_report(
    arguments: dict[str, Any], report: SelfReportConfig | None, tool: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the arguments the tool gets, the self-report) of one call."""
    if report is None or not report.covers(tool):
        return arguments, {}
    params = report.params
    if not any(p in arguments for p in params):
        return arguments, {}
    kept = {k: v for k, v in arguments.items() if k not in params}
    return kept, {k: arguments[k] for k in params if k in arguments}


def report_problem(
    tool: str, arguments: dict[str, Any], report: SelfReportConfig | None
) -> str | None:
    """None when the call carries a valid self-report (or needs none); otherwise a
    tool error saying what to send, so the model can call again."""
    if report is None or not report.covers(tool):
        return None
    state, score = report.state_param, report.score_param
    scale = report.scale
    problems = []
    if not isinstance(arguments.get(state), str) or not arguments[state].strip():
        problems.append(f"{state} (text: your current state) is required")
    value = arguments.get(score)
    if score not in arguments:
        problems.append(f"{score} ({report.score_words()}) is required")
    elif not (isinstance(value, int) and _whole(value) and scale.min <= value <= scale.max):
        shown = repr(value)[:40]
        problems.append(
            f"{score} must be a whole number from {scale.min} to {scale.max}, got: {shown}"
        )
    if not problems:
        return None
    return (
        f"Error: invalid self-report in the call of {tool}: {'; '.join(problems)}. "
        "Nothing was done: call the tool again with both."
    )


def added_problem(tool: AddedTool, arguments: dict[str, Any]) -> str | None:
    """None when ``arguments`` fit the tool's parameters; otherwise a tool error."""
    properties = tool.parameters.properties
    problems = []
    missing = [p for p in tool.parameters.required if p not in arguments]
    if missing:
        problems.append(f"missing argument(s) {', '.join(missing)}")
    unexpected = sorted(set(arguments) - set(properties))
    if unexpected:
        problems.append(f"unexpected argument(s) {', '.join(unexpected)}")
    for name, spec in properties.items():
        if name not in arguments:
            continue
        value = arguments[name]
        if not _of_type(value, spec.type):
            problems.append(f"argument {name} must be {_WORDS[spec.type]}")
        elif spec.enum is not None and value not in spec.enum:
            problems.append(f"argument {name} must be one of {', '.join(map(str, spec.enum))}")
    if not problems:
        return None
    return f"Error: {'; '.join(problems)}. Usage: {tool.name}({', '.join(properties)})."


def _of_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _PY_TYPES[kind])


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def uses_of(uses: tuple[tuple[str, int], ...], name: str) -> int:
    """How many calls of ``name`` ran before (``AgentState.tool_uses``)."""
    return next((n for tool, n in uses if tool == name), 0)


def used(uses: tuple[tuple[str, int], ...], name: str) -> tuple[tuple[str, int], ...]:
    """``uses`` with one more call of ``name``."""
    if any(tool == name for tool, _ in uses):
        return tuple((tool, n + 1 if tool == name else n) for tool, n in uses)
    return (*uses, (name, 1))
