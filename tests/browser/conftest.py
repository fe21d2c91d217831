"""Browser tests: Playwright drives Debian's Chromium (``make test`` installs it; its
own browser download cannot work here) against the whole stack started by
``contreact up``, the dashboard included. Screenshots of every page are kept in
``test-artifacts/browser/``."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from contreact_bus.local_redis import free_port
from tests.e2e.conftest import Stack, own_database
from tests.support.stack_env import stack_environment

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("CONTREACT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""The Redis database of the browser tests' stack (the other tests flush database 0)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Playwright's sync API runs its own event loop in this thread while it is open:
    closed with the module, so the asyncio tests after it get their loops."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: `make test` installs Debian's chromium "
            "(or set CONTREACT_CHROMIUM to a Chromium binary)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: errors.append(msg.text) if msg.type == "error" else None,
    )
    yield page
    context.close()
    assert not errors, f"the page reported errors: {errors}"


@pytest.fixture(scope="module")
def ui_stack(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UIStack]:
    """Every service as its own process (``contreact up``), the dashboard on a free port."""
    url = own_database(redis_server)
    workdir = tmp_path_factory.mktemp("browser-stack")
    port = free_port()
    env = stack_environment(
        workdir / "data", redis_url=url, CONTREACT_UI_PORT=str(port), CONTREACT_UI_POLL_S="0.1"
    )
    stack = UIStack(env=env, data_dir=workdir / "data", workdir=workdir, port=port)
    stack.cli("up", check=True)
    try:
        stack.wait_until(stack.answers, timeout=30, what="the dashboard to answer")
        yield stack
    finally:
        stack.cli("down")


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


def wait(predicate: Any, timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
