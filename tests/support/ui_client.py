"""The whole dashboard app over projections rebuilt from archives, for the integration
tests of its pages (``tests/integration/test_ui_*.py``): no Redis (its URL answers
nothing), no browser."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_events.catalog import Event
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings


def rebuilt(data: Path, logs: dict[str, list[Event]]) -> Path:
    """``data`` with the logs archived and the projections rebuilt from them."""
    for run_id, log in logs.items():
        write_archive(data / "runs", run_id, log)
    report = asyncio.run(rebuild(data / "ui.db", None, data / "runs"))
    assert not report.problems and report.runs == len(logs), report
    return data


@contextmanager
def app_client(data_dir: Path) -> Iterator[TestClient]:
    app = create_app(UISettings(data_dir=data_dir, redis_url="redis://127.0.0.1:1/0"))
    with TestClient(app) as client:
        yield client


def get(client: TestClient, path: str, status: int = 200) -> Any:
    """The answer's JSON for a ``.json`` path, else the response; ``status`` checked."""
    response = client.get(path)
    assert response.status_code == status, (path, response.status_code, response.text[:500])
    return response.json() if path.split("?")[0].endswith(".json") else response
