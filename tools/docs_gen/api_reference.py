"""``docs/reference/api.md``: the dashboard's JSON API, read from its OpenAPI document
(``services/ui/openapi.json``, which ``python -m contreact_ui.schema`` writes and a test
keeps equal to the app's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.docs_gen.events_reference import schema_type
from tools.docs_gen.markdown import banner, cell, code, prose, table

OPENAPI = Path(__file__).resolve().parents[2] / "services" / "ui" / "openapi.json"


def _response(operation: dict[str, Any]) -> str:
    ok = operation.get("responses", {}).get("200", {})
    for media, body in ok.get("content", {}).items():
        schema = body.get("schema")
        return f"{media}: {schema_type(schema)}" if schema else media
    return ""


def render() -> str:
    document = json.loads(OPENAPI.read_text())
    parts = [
        banner("the dashboard's OpenAPI document (`services/ui/openapi.json`)"),
        "# Dashboard JSON API\n",
        prose(document["info"]["description"])
        + " The dashboard serves this document at `/openapi.json`; the response shapes "
        "are the schemas named there (`components.schemas`). Everything is read-only.\n",
        table(
            ["path", "what it gives"],
            [
                [
                    code(f"{method.upper()} {path}"),
                    prose(op.get("summary") or op.get("description", "").split("\n")[0]),
                ]
                for path, methods in document["paths"].items()
                for method, op in methods.items()
            ],
        ),
    ]
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            parts.append(f"## `{method.upper()} {path}`\n")
            if op.get("description"):
                parts.append(prose(op["description"]) + "\n")
            params = [
                [
                    code(p["name"]),
                    p["in"],
                    "yes" if p.get("required") else "",
                    cell(schema_type(p.get("schema", {}))),
                    prose(p.get("description", "")),
                ]
                for p in op.get("parameters", ())
            ]
            if params:
                parts.append(table(["parameter", "in", "required", "type", "what it is"], params))
            answer = _response(op)
            if answer:
                parts.append(f"Answer (200): {code(answer)}\n")
    return "\n".join(parts)
