"""The JSON schema of every run-log event, assessment and query record and bus message, generated
from the models.

``python -m contreact_events.wire.schema`` rewrites ``libs/events/schema/``; a test fails
when the committed files drift from the models.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from contreact_events.catalog import (
    ASSESSMENT_ADAPTER,
    ASSESSMENT_SCHEMA_VERSIONS,
    EVENT_ADAPTER,
    SCHEMA_VERSIONS,
)
from contreact_events.catalog.query import QUERY_ADAPTER, QUERY_SCHEMA_VERSIONS
from contreact_events.wire.tasks import InboxMessage, LLMTask, MemoryTask

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schema"


def schemas() -> dict[str, dict[str, Any]]:
    versions = dict(sorted(SCHEMA_VERSIONS.items()))
    events = EVENT_ADAPTER.json_schema(mode="validation")
    events["title"] = "ContReAct run-log event"
    events["x-schema-versions"] = versions
    assessments = ASSESSMENT_ADAPTER.json_schema(mode="validation")
    assessments["title"] = "ContReAct assessment event (run:{RUN}:assessments)"
    assessments["x-schema-versions"] = dict(sorted(ASSESSMENT_SCHEMA_VERSIONS.items()))
    queries = QUERY_ADAPTER.json_schema(mode="validation")
    queries["title"] = "ContReAct query record (run:{RUN}:queries)"
    queries["x-schema-versions"] = dict(sorted(QUERY_SCHEMA_VERSIONS.items()))
    out = {
        "events.schema.json": events,
        "assessment-events.schema.json": assessments,
        "query-events.schema.json": queries,
    }
    for name, model in (
        ("llm-task", LLMTask),
        ("memory-task", MemoryTask),
        ("inbox-message", InboxMessage),
    ):
        out[f"{name}.schema.json"] = TypeAdapter(model).json_schema(mode="validation")
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in schemas().items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m contreact_events.wire.schema", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("directory", nargs="?", type=Path, default=SCHEMA_DIR)
    for written in write(parser.parse_args(argv).directory):
        print(f"wrote {written}")


if __name__ == "__main__":
    main()
