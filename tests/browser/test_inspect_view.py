"""Inspect's own viewer serves our logs: ``inspect view`` (inspect_ai's CLI, as users
run it) over the ``.eval`` files ``contreact export --format inspect`` wrote, and
Chromium opens a run's sample and finds its reflections, its scores and its tool
results answering its calls."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from contreact_bus.local_redis import free_port
from tests.support.inspect_runs import FORK, REPLICAS, archived_experiment

pytestmark = [pytest.mark.browser]

VIEWER_WAIT_S = 60
"""Guards a hang of the viewer's start, generously: it answers within a few seconds."""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = archived_experiment(tmp_path_factory.mktemp("inspect-view") / "data")
    out = data.parent / "logs"
    env = {**os.environ, "CONTREACT_DATA_DIR": str(data), "REDIS_URL": "redis://127.0.0.1:1/0"}
    command = ["export", *REPLICAS, FORK, "--format", "inspect", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "contreact_cli", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # guards a hang, generously
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def viewer(exported: Path) -> Iterator[str]:
    port = free_port()
    inspect = Path(sys.executable).parent / "inspect"
    proc = subprocess.Popen(
        [str(inspect), "view", "--log-dir", str(exported), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=exported,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + VIEWER_WAIT_S
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                output = proc.stdout.read().decode() if proc.stdout else ""
                raise AssertionError(f"inspect view did not answer at {url}: {output[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_inspect_view_opens_a_runs_sample_and_shows_its_reflections(
    viewer: str, browser: Browser
) -> None:
    """``viewer`` first: the export runs before Playwright's loop holds this thread."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    missing: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    try:
        page.goto(viewer)
        page.get_by_text("m/gpt5").first.click()  # the model's log: its replicas as samples
        page.wait_for_url("**/#/tasks/insp_m-gpt5.eval**")
        body = page.locator("body")
        body.get_by_text("2 Samples", exact=True).wait_for()
        page.goto(f"{viewer}/#/tasks/insp_m-gpt5.eval/samples/sample/GPT5/2/")
        body.get_by_text("Sample GPT5 (Epoch 2)").wait_for()
        page.get_by_text("Messages", exact=True).first.click()
        for cycle in (1, 2):  # replica B is seed 2 of the scripted experiment
            body.get_by_text(f"Cycle {cycle} of run 2: I kept a note and asked.").first.wait_for()
        text = body.inner_text()
        assert "Stored c1." in text and "Acknowledged." in text  # tool results by their calls
        page.screenshot(path=str(Path("test-artifacts/browser").resolve() / "inspect-view.png"))
    finally:
        context.close()
    assert not errors, errors
    # the viewer asks for a flow file of its own, which our logs have no use for
    assert [url for url in missing if "/api/flow" not in url] == []
