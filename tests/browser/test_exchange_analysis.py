"""Issue 17's dashboard item in a real browser: each operator exchange shows its analysis
beside it (the model's, the heuristic's standing in with its reason, one still awaited),
and memory entries the platform's memory policy wrote are marked persistent (by
provenance: an agent's own key under the policy's prefix is not). The
real ``contreact-ui`` process over archived runs of hostile text made by the pure core
(``tests/support/exchange_runs.py``); each page is checked inert and shot at 1,400 and
900 px (``test-artifacts/browser/exchanges-*.png``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from tests.support import hostile
from tests.support.dash_runs import ArchiveUI, write_runs
from tests.support.exchange_runs import (
    KEPT_BY_POLICY,
    NOTES_KEY,
    PERSISTENT_KEY,
    SUMMARY,
    analysed_log,
    policy_log,
)
from tests.support.stack import own_database
from tests.support.ui_stack import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

RUN = "exchanges"
POLICY_RUN = "policy-run"
WIDTHS = (1400, 900)


@pytest.fixture(scope="module")
def ui(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArchiveUI]:
    data = tmp_path_factory.mktemp("exchange-runs")
    write_runs(data / "runs", {RUN: analysed_log(RUN), POLICY_RUN: policy_log(POLICY_RUN)})
    server = ArchiveUI(data, own_database(redis_server))
    try:
        server.wait_ready()
        server.wait_projected({RUN: "running", POLICY_RUN: "completed"})  # RUN: an analysis awaited
        yield server
    finally:
        server.stop()


def both_widths(page: Page, name: str) -> None:
    """The page at 1,400 and 900 px: nothing wider than the window, then a screenshot."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)  # Plotly relays its charts out on resize
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, (name, width, overflow)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"exchanges-{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS[0], "height": 1000})


def inert(page: Page, label: str) -> None:
    """Hovering everything runs none of the agent's, operator's or model's text."""
    page.evaluate(
        "document.querySelectorAll('main *').forEach(e => "
        "e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"
    )
    page.wait_for_timeout(100)
    assert page.evaluate("window.__pwned") is None, label
    for selector in ("img[src=x]", "b[onmouseover]", "[onerror]", "[onload]", "svg[onload]"):
        assert page.locator(selector).count() == 0, (label, selector)
    text = page.evaluate("document.body.innerText")
    assert "\x1b" not in text and "\u202e" not in text, label


def test_the_run_page_shows_each_exchanges_analysis_beside_it(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/{RUN}")
    rows = page.locator("#operator-table tbody tr")
    assert rows.count() == 3
    first, second, third = (rows.nth(i).locator("td.analysis-cell") for i in range(3))
    assert first.locator(".intent").inner_text() == "request"
    assert first.locator(".context-type").inner_text() == "new"
    assert first.locator(".confidence").inner_text() == "0.83"
    assert first.locator(".persistence").inner_text() == "0.91"
    assert first.locator(".analyser").inner_text() == "model"
    assert first.locator(".summary").inner_text() == SUMMARY  # shown as the text it is
    keys = first.locator(".relevant code").all_inner_texts()
    assert keys == [PERSISTENT_KEY, NOTES_KEY, hostile.HANDLER]
    assert first.locator(".relevant .badge.persistent").count() == 0  # the agent's own key
    reasoning = first.locator("details.reasoning")
    reasoning.locator("summary").click()
    assert "window.__pwned='reasoning'" in reasoning.locator("pre").inner_text()
    assert second.locator(".analyser").inner_text().startswith("heuristic")
    assert "standing in for the model" in second.locator(".analyser").inner_text()
    assert "the model's answer was refused" in second.locator(".fallback-reason").inner_text()
    assert third.inner_text().strip() == "awaiting its analysis (model)"
    inert(page, "run page")
    page.locator("#operator-table").scroll_into_view_if_needed()
    both_widths(page, "run")


def test_the_replay_page_shows_the_exchanges_as_they_stood(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/{RUN}/replay?cycle=2")  # cycle 1's analysis came after the run
    cells = page.locator("#operator-table td.analysis-cell")
    assert cells.count() == 1
    assert cells.first.inner_text().strip() == "awaiting its analysis (model)"
    page.goto(f"{ui.base}/runs/{RUN}/replay")
    cells = page.locator("#operator-table td.analysis-cell")
    assert cells.count() == 3
    assert cells.nth(0).locator(".summary").inner_text() == SUMMARY
    assert cells.nth(2).inner_text().strip() == "awaiting its analysis (model)"
    own = page.locator(f'table.memory tr[data-key="{PERSISTENT_KEY}"]')
    assert own.count() == 1 and own.locator(".badge.persistent").count() == 0
    inert(page, "replay")
    both_widths(page, "replay")


def test_the_memory_page_marks_persistent_entries(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/{POLICY_RUN}/memory")
    marked = page.locator("table.memory tr.persistent")
    assert marked.count() == 1
    assert marked.locator("td.key code").inner_text() == KEPT_BY_POLICY
    assert page.locator("table.memory .badge.persistent").count() == 1
    notes = page.locator(f'table.memory tr[data-key="{NOTES_KEY}"]')
    assert notes.locator(".badge.persistent").count() == 0
    both_widths(page, "memory-policy")
    page.goto(f"{ui.base}/runs/{RUN}/memory")  # the agent's own persistent/ key: unmarked
    assert page.locator(f'table.memory tr[data-key="{PERSISTENT_KEY}"]').count() == 1
    assert page.locator("table.memory .badge.persistent").count() == 0
    inert(page, "memory")
    both_widths(page, "memory")
    page.goto(f"{ui.base}/search?q=javascript&kind=memory")
    assert page.locator("#search-hits .badge.persistent").count() == 0
    inert(page, "search")
    both_widths(page, "search")
