"""The dashboard's OpenAPI document (its JSON contracts), generated from the app.

``python -m contreact_ui.schema`` rewrites ``services/ui/openapi.json``; a test fails
when the committed file drifts from the models and routes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from contreact_ui.app import create_app
from contreact_ui.settings import UISettings

OPENAPI_PATH = Path(__file__).resolve().parent.parent / "openapi.json"


def document() -> dict[str, Any]:
    return create_app(UISettings(redis_url="redis://unused")).openapi()


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(path: Path = OPENAPI_PATH) -> Path:
    path.write_text(render(document()), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m contreact_ui.schema", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("path", nargs="?", type=Path, default=OPENAPI_PATH)
    print(f"wrote {write(parser.parse_args(argv).path)}")


if __name__ == "__main__":
    main()
