"""Browser tests: Playwright drives Debian's Chromium (``make test`` installs it; its
own browser download cannot work here) against the whole stack started by
``contreact up``, the dashboard included. Screenshots of every page are kept in
``test-artifacts/browser/``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from contreact_bus.local_redis import free_port
from tests.support.stack import own_database
from tests.support.stack_env import stack_environment
from tests.support.ui_stack import UIStack

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
