"""The paper's 2 x 2 swap (an experiment file's ``fork`` section), rated by both models,
in a real browser: the real ``contreact-ui`` process over its archived runs and records
(``tests/support/swap_runs.py``). The compare page's Table 1 and Table 2 count the
replicas under their labels, with the diagonal and self-preference, and the forks as
rows of their own (``A -> B at K``, their own cycles, never self-ratings) only when
asked; the experiment page says "2 models x 2 replicas, 2 forks at cycle K", names the
forks by their own label and shows the ``fork`` section. Each at 1,400 and 900 px, shot
to test-artifacts/browser/ as ``forks-*``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from contreact_bus.assessments import append_archive
from tests.support.dash_runs import ArchiveUI, write_runs
from tests.support.stack import own_database
from tests.support.swap_runs import ratings, swap
from tests.support.ui_stack import shot

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

EXP = "swapped"
WIDTHS = (1400, 900)
FORKS = ["A -> B at 2", "B -> A at 2"]


@pytest.fixture(scope="module")
def ui(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArchiveUI]:
    data = tmp_path_factory.mktemp("fork-pages")
    runs = swap(EXP)
    write_runs(data / "runs", runs.logs)
    for run_id in runs.logs:
        rated = [r for r in ratings(EXP, list(runs.logs)) if r.run_id == run_id]
        append_archive(data / "runs", run_id, rated)
    server = ArchiveUI(data, own_database(redis_server))
    try:
        server.wait_ready()
        server.wait_projected(dict.fromkeys(runs.logs, "completed"))
        yield server
    finally:
        server.stop()


def fits(page: Page, name: str) -> None:
    """At each width the page does not scroll sideways (wide tables scroll in their
    own box); shot at both widths."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)  # Plotly relays its charts out on resize
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, (name, width, wide)
        shot(page, f"forks-{name}-{width}")
    page.set_viewport_size({"width": WIDTHS[0], "height": 1000})


def headers(page: Page, table: str) -> list[str]:
    return page.locator(f"#{table} thead tr").last.locator("th").all_inner_texts()


def test_the_compare_page_counts_replicas_and_forks_apart(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/compare?experiment={EXP}")
    page.locator("#table2").wait_for(timeout=60_000)  # the statistics load on the first one
    assert headers(page, "table1")[:2] == ["A", "B"] and "A -> B at 2" not in headers(
        page, "table1"
    )
    rows = page.locator("#table2 tbody tr th").all_inner_texts()
    assert rows == ["A", "B"]
    diagonal = page.locator("#table2 td.self")
    assert diagonal.count() == 2
    assert [diagonal.nth(i).get_attribute("data-history") for i in range(2)] == ["A", "B"]
    stats = page.locator("#table2-stats").inner_text()
    assert "self-preference of A\n-1.00" in stats and "self-preference of B\n+1.00" in stats
    assert "4 fork run(s) left out" in page.locator("#table1-warnings").inner_text()
    fits(page, "compare")

    page.select_option("#compare-forks", "as-rows")
    page.locator("#compare-submit").click()
    page.locator("#table2").wait_for()
    assert page.url.endswith("forks=as-rows")
    assert headers(page, "table1")[:4] == ["A", "B", *FORKS]
    reflection = page.locator("#table1 tr[data-metric=reflection_kchars] td.ours .mean")
    assert reflection.all_inner_texts() == ["0.03", "3.00", "2.00", "0.02"]  # own cycles
    assert page.locator("#table2 tbody tr th").all_inner_texts() == ["A", "B", *FORKS]
    for fork in FORKS:
        cells = page.locator(f"#table2 td[data-history='{fork}']")
        assert (
            cells.count() == 2
            and page.locator(f"#table2 td.self[data-history='{fork}']").count() == 0
        )
    assert page.locator("#table2 td.self").count() == 2
    fits(page, "compare-as-rows")


def test_the_experiment_page_says_what_the_swap_is(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/experiments/{EXP}")
    summary = page.locator("#design-summary").inner_text()
    assert summary.startswith("2 model(s) \u00d7 2 replica(s)")
    assert "2 fork(s) at cycle 2: A -> B at 2, B -> A at 2 (4 run(s))" in summary
    assert page.locator("#replicas-table tbody tr").count() == 4
    forks = page.locator("#forks-table tbody tr td:first-child").all_inner_texts()
    assert forks == ["A-A -> B", "A-B -> B", "B-A -> A", "B-B -> A"]
    section = page.locator("#fork-section").inner_text()
    assert "fork: {at_cycle: 2, cycle_count: 4, from: [A, B], to: [A, B]}" in section
    assert [h.strip() for h in headers(page, "design-table")][2:] == ["A", "B"]
    fits(page, "experiment")
