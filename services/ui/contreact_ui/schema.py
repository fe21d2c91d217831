"""The dashboard's OpenAPI document (its JSON contracts), generated from the app.

``python -m contreact_ui.schema`` rewrites ``services/ui/openapi.json``; a test fails
when the committed file drifts from the models and routes.
"""

from __future__ import annotations

import json
import sys
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


if __name__ == "__main__":
    print(f"wrote {write(Path(sys.argv[1]) if len(sys.argv) > 1 else OPENAPI_PATH)}")
