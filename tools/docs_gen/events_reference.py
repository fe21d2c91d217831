"""``docs/reference/events.md``: every run-log event and every assessment event, read
from the JSON schemas the catalog generates (``libs/events/schema/``, checked for drift
by their own test), with each field's docstring from its event class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.docs_gen.config_reference import attribute_docs
from tools.docs_gen.markdown import banner, cell, code, prose, table

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "libs" / "events" / "schema"
ENVELOPE = ("event_id", "run_id", "type", "schema_version", "ts", "causation_id", "correlation_id")
"""The fields every run-log event carries (``catalog/envelope.py``): listed once."""


def schema_type(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(v) for v in node["enum"])
    if "anyOf" in node:
        return " | ".join(schema_type(n) for n in node["anyOf"])
    kind = node.get("type")
    if kind == "array":
        if "prefixItems" in node:
            return "[" + ", ".join(schema_type(n) or "any" for n in node["prefixItems"]) + "]"
        return f"list of {schema_type(node.get('items', {})) or 'any'}"
    if kind == "object" and "additionalProperties" in node:
        extra = node["additionalProperties"]
        inner = schema_type(extra) if isinstance(extra, dict) else "any"
        return f"mapping to {inner or 'any'}"
    if kind == "string" and node.get("format"):
        return f"string ({node['format']})"
    return str(kind or "")


def _classes() -> dict[str, type]:
    from contreact_events import catalog

    return {name: value for name, value in vars(catalog).items() if isinstance(value, type)}


def _event(name: str, node: dict[str, Any], version: int, skip: tuple[str, ...]) -> str:
    klass = _classes().get(name)
    docs = attribute_docs(klass) if klass is not None else {}
    required = set(node.get("required", ()))
    rows = [
        [
            code(field),
            cell(schema_type(spec)),
            "yes" if field in required else "",
            prose(docs.get(field, spec.get("description", "")).split("\n\n")[0]),
        ]
        for field, spec in sorted(node.get("properties", {}).items())
        if field not in skip
    ]
    parts = [f"### {name}\n", f"Schema version {version}.\n"]
    if node.get("description"):
        parts.append(prose(node["description"]) + "\n")
    if rows:
        parts.append(table(["field", "type", "required", "what it is"], rows))
    return "\n".join(parts)


def _section(filename: str, skip: tuple[str, ...]) -> list[str]:
    schema = json.loads((SCHEMAS / filename).read_text())
    versions = schema["x-schema-versions"]
    names = [ref["$ref"].rsplit("/", 1)[-1] for ref in schema["oneOf"]]
    return [_event(n, schema["$defs"][n], versions[n], skip) for n in names]


def render() -> str:
    events = json.loads((SCHEMAS / "events.schema.json").read_text())
    names = [ref["$ref"].rsplit("/", 1)[-1] for ref in events["oneOf"]]
    index = ", ".join(f"[{n}](#{n.lower()})" for n in names)
    return "\n".join(
        [
            banner("the JSON schemas in `libs/events/schema/`"),
            "# Events\n",
            "A run's log (`run:{RUN}` in Redis, `data/runs/RUN.events.jsonl` once archived) "
            "is a list of these events in the order the orchestrator folded them. Each "
            "event type has its own schema version; an older stored shape is upcast when "
            "read, a newer one is refused with a clear message. The schemas themselves: "
            "`libs/events/schema/*.schema.json` (`make schema` rewrites them).\n",
            "## Every run-log event carries\n",
            table(
                ["field", "what it is"],
                [
                    [code("event_id"), "this event's id"],
                    [code("run_id"), "the run whose log holds it"],
                    [code("type"), "the event's name (one of those below)"],
                    [code("schema_version"), "the version of this event type's shape"],
                    [code("ts"), "when it was folded (UTC)"],
                    [code("causation_id"), "the task or input it answers, if any"],
                    [code("correlation_id"), "the run's correlation id"],
                ],
            ),
            f"## Run-log events\n\n{index}\n",
            *_section("events.schema.json", ENVELOPE),
            "## Assessment events\n",
            "Records beside a run, never in its log (`run:{RUN}:assessments`, "
            "`data/runs/RUN.assessments.jsonl`): ratings, failures and a person's readings.\n",
            *_section("assessment-events.schema.json", ()),
        ]
    )
