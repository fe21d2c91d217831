"""``contreact report`` (run as a process) in Chromium: the one HTML file it writes
renders from disk with every chart visible, makes no request (each one is intercepted
and refused, and the test fails naming it), and the hostile agent text in its runs
stays text. Screenshots in ``test-artifacts/browser/``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route

from contreact_bus.archive import write_archive
from tests.support import hostile
from tests.support.analysis_runs import EXPERIMENT, experiment_logs
from tests.support.ui_stack import shot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2-model x 3-replica experiment, its reflections and operator messages
    carrying hostile text, archived; the report written by the command."""
    data = tmp_path_factory.mktemp("report-data")
    extra = hostile.REFLECTION.replace("{cycle}", "1") + " " + hostile.OPERATOR
    for run, events in experiment_logs(extra=extra).items():
        write_archive(data / "runs", run, events)
    target = tmp_path_factory.mktemp("report-out") / "report.html"  # never inside the data folder
    # A process of its own: Playwright's sync API holds this thread's event loop.
    env = {
        **os.environ,
        "CONTREACT_DATA_DIR": str(data),
        "REDIS_URL": "redis://127.0.0.1:1/0",  # no Redis: the archives alone
    }
    command = [sys.executable, "-m", "contreact_cli", "report", EXPERIMENT, "--out", str(target)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def test_the_report_renders_from_disk_with_no_request(page: Page, report_file: Path) -> None:
    url = report_file.as_uri()
    requests: list[str] = []

    def refuse_all_but_the_file(route: Route) -> None:
        requests.append(route.request.url)
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    page.route("**/*", refuse_all_but_the_file)
    page.goto(url)
    page.wait_for_load_state("load")
    for details in page.locator("details.run").all():
        details.evaluate("element => { element.open = true; }")
    charts = page.locator("figure.chart svg")
    assert charts.count() == 4
    for chart in charts.all():
        chart.scroll_into_view_if_needed()
        assert chart.is_visible()
        box = chart.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100, box
    # Every line of the charts is drawn: each model's series is a path in each chart.
    assert page.locator("figure.chart svg path").count() > 4 * 2
    assert page.locator("table.table1 tbody tr").count() == 6
    assert page.locator("details.run").count() == 6
    # The hostile text is there, as text, and did nothing.
    page.locator("pre.reflection").first.hover()
    page.locator("table.operator td").first.hover()
    assert page.evaluate("() => window.__pwned") is None
    reflections = page.locator("pre.reflection").all_inner_texts()
    assert any("<script>window.__pwned = 'reflection'</script>" in text for text in reflections)
    assert page.locator("pre.agent script, pre.agent b, pre.agent img").count() == 0
    assert page.title() == f"Experiment {EXPERIMENT}"
    shot(page, "report")
    assert requests == [url], f"the report asked for more than itself: {requests}"
