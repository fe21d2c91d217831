"""The browser tests' helpers: the stack with its dashboard (``UIStack``),
screenshots kept in ``test-artifacts/browser/``, and waiting on a condition. The
fixtures are in ``tests/browser/conftest.py``."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from tests.support.stack import Stack
from tests.support.waits import HANG_GUARD_S

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "browser"


class UIStack(Stack):
    def __init__(self, *, env: dict[str, str], data_dir: Path, workdir: Path, port: int) -> None:
        super().__init__(env=env, data_dir=data_dir, workdir=workdir)
        self.base = f"http://127.0.0.1:{port}"

    def get_json(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=10) as response:
            return json.loads(response.read())

    def answers(self) -> bool:
        try:
            return bool(self.get_json("/health.json")["ok"])
        except (OSError, urllib.error.URLError):
            return False

    def run_row(self, run_id: str) -> dict[str, Any]:
        rows = self.get_json("/runs.json?q=" + run_id)["runs"]
        return next((r for r in rows if r["run_id"] == run_id), {})


def shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait(predicate: Any, timeout: float = HANG_GUARD_S, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
