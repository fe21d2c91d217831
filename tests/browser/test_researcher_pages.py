"""Issue 28's dashboard defects 13 to 15, tried in Chromium as a researcher would, at
1,400 and 900 px: a fork says what it is on its run page and its parent links to it,
the lineage page fits the window; charts stay in their cards after a window resize, the
ratings and the run page's assessments read at 900 px, compare by run of eight runs
leaves each plot room under its legend; the timeline gives the operator its wait, a
timed-out reply is not read as the operator's words, semantic search says what it is
doing and its model is warm before the first search. The real ``contreact-ui`` process
over archived runs made by the pure core (``tests/support/researcher_runs.py``).

Layout is measured on element boxes (inside the card, the window, readable widths,
plot heights), never on the pixels of screenshots; the screenshots
(``test-artifacts/browser/researcher-*.png``) are for people."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.support.dash_runs import ArchiveUI
from tests.support.researcher_runs import (
    AUTO_REPLY,
    FORK,
    FORK_AT,
    HUMAN,
    PARENT,
    RATED,
    REPLICAS,
    REPLY_AFTER_S,
    TIMEOUT_S,
    write_researcher_runs,
)
from tests.support.stack import own_database
from tests.support.ui_stack import ARTIFACTS, wait

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

WIDTHS = (1400, 900)
SLACK = 1.5
"""px: a box may pass another by sub-pixel rounding, no more."""


@pytest.fixture(scope="module")
def ui(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArchiveUI]:
    data = tmp_path_factory.mktemp("researcher-runs")
    statuses = write_researcher_runs(data)
    server = ArchiveUI(data, own_database(redis_server))
    try:
        server.wait_ready()
        server.wait_projected(statuses)
        yield server
    finally:
        server.stop()


def at(page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(300)  # the charts follow their cards (a ResizeObserver)


def shot(page: Page, name: str, width: int) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"researcher-{name}-{width}.png"))


def box(page: Page, selector: str) -> dict[str, float]:
    found: dict[str, float] | None = page.evaluate(
        "s => { const e = document.querySelector(s); if (!e) return null;"
        " const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,"
        " width: r.width, height: r.height}; }",
        selector,
    )
    assert found is not None, f"no {selector} on {page.url}"
    return found


def page_width(page: Page) -> int:
    width: int = page.evaluate("document.documentElement.scrollWidth")
    return width


# --- 28.13: a fork says what it is --------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_a_fork_says_on_its_run_page_what_it_is(ui: ArchiveUI, page: Page, width: int) -> None:
    at(page, width)
    page.goto(f"{ui.base}/runs/{FORK}")
    line = page.locator("#fork-of")
    assert line.is_visible()
    where = box(page, "#fork-of")
    assert where["top"] < 1000 and where["right"] <= width + SLACK  # seen without scrolling
    text = " ".join(line.inner_text().split())
    assert f"Fork of {PARENT} at cycle {FORK_AT}" in text
    assert f"cycles 1\N{EN DASH}{FORK_AT} are the parent's" in text
    assert 'model_name "model-a" → "model-b"' in text
    assert "diversity.moderate_threshold 0.7 → 0.6" in text
    shot(page, "fork-run", width)
    page.locator("#fork-parent").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert page.url.endswith(f"/runs/{PARENT}")
    assert page.locator("#fork-of").count() == 0  # the parent is no fork
    forks = page.locator("#forks li")
    assert forks.count() == 1
    listed = " ".join(forks.first.inner_text().split())
    assert listed.startswith(f"{FORK} at cycle {FORK_AT} completed")
    assert box(page, "#forks")["top"] < 1000
    shot(page, "fork-parent", width)
    forks.first.get_by_role("link", name=FORK).click()
    page.wait_for_url(f"**/runs/{FORK}")  # loaded, not only its address
    page.goto(f"{ui.base}/runs/{PARENT}/lineage")
    assert page.locator("#lineage-none").is_visible()
    assert page.locator(f"#forks li[data-run='{FORK}'] a").first.get_attribute("href") == (
        f"/runs/{FORK}"
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_lineage_page_fits_the_window(ui: ArchiveUI, page: Page, width: int) -> None:
    at(page, width)
    page.goto(f"{ui.base}/runs/{FORK}/lineage")
    assert page_width(page) <= width  # it was tens of thousands of px wide
    changes = box(page, "#lineage-changes")
    assert changes["left"] >= 0 and changes["right"] <= width + SLACK
    assert page.locator("#lineage-changes tbody tr").count() == 3
    cycles = box(page, "#lineage-cycles")
    main = box(page, "main")
    assert cycles["right"] <= main["right"] + SLACK
    reflections = page.locator("#lineage-cycles pre.reflection")
    assert reflections.count() == 6  # cycles 4 to 6 of fork and parent
    widths = [found["width"] for r in reflections.all() if (found := r.bounding_box())]
    assert len(widths) == 6 and min(widths) >= 200, widths  # each reads as a paragraph
    shot(page, "lineage", width)


# --- 28.14: layout ------------------------------------------------------------------


CHART_BOXES = """() => [...document.querySelectorAll('.chart')].map(c => {
  const card = c.getBoundingClientRect();
  const svg = c.querySelector('.main-svg');
  const s = svg ? svg.getBoundingClientRect() : null;
  return {id: c.id, card: [card.left, card.top, card.right, card.bottom],
          svg: s && [s.left, s.top, s.right, s.bottom]};
})"""


def charts_in_their_cards(page: Page, label: str) -> None:
    charts: list[dict[str, Any]] = page.evaluate(CHART_BOXES)
    assert charts, label
    for chart in charts:
        assert chart["svg"] is not None, (label, chart["id"])
        left, top, right, bottom = chart["card"]
        s_left, s_top, s_right, s_bottom = chart["svg"]
        inside = (
            s_left >= left - SLACK
            and s_top >= top - SLACK
            and s_right <= right + SLACK
            and s_bottom <= bottom + SLACK
        )
        assert inside, (label, chart)


@pytest.mark.parametrize("sizes", [(1400, 900), (900, 1400), (1400, 1100, 900, 1400)])
def test_charts_follow_their_cards_when_the_window_is_resized(
    ui: ArchiveUI, page: Page, sizes: tuple[int, ...]
) -> None:
    at(page, sizes[0])
    page.goto(f"{ui.base}/runs/{PARENT}")
    page.wait_for_selector("#chart-similarity .main-svg")
    charts_in_their_cards(page, f"loaded at {sizes[0]}")
    for width in sizes[1:]:
        at(page, width)
        page.wait_for_timeout(500)
        label = f"{sizes} at {width}"
        charts_in_their_cards(page, label)
        assert page_width(page) <= width, label
        heading = page.locator("h2", has_text="Cycles").first.bounding_box()
        heatmap = box(page, "#chart-similarity .main-svg")
        assert heading and heatmap["bottom"] <= heading["y"], (label, heatmap, heading)
    shot(page, "charts-resized", sizes[-1])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_ratings_read_at_any_width(ui: ArchiveUI, page: Page, width: int) -> None:
    at(page, width)
    page.goto(f"{ui.base}/assessments?experiment=tides")
    assert page_width(page) <= width
    main = box(page, "main")
    raws = page.locator("#ratings-table pre.text")
    assert raws.count() == 2 * len(RATED)
    for raw in raws.all():
        found = raw.bounding_box()
        assert found and found["width"] >= 0.6 * main["width"], (width, found)  # was 4 chars
    shot(page, "ratings", width)
    page.goto(f"{ui.base}/runs/{RATED[0]}")
    for details in page.locator("#run-assessments details").all():
        details.evaluate("d => d.open = true")
    table = box(page, "#run-assessments")
    assert table["right"] <= box(page, "main")["right"] + SLACK, (width, table)
    assert page_width(page) <= width
    page.locator("#run-assessments").scroll_into_view_if_needed()
    shot(page, "run-assessments", width)


PLOT_AREAS = """() => [...document.querySelectorAll('.chart')].map(c => {
  const plot = c.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
  const legend = c.querySelector('.legend').getBoundingClientRect();
  return {id: c.id, plot: [plot.top, plot.bottom], legend: [legend.top, legend.bottom]};
})"""


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_by_run_leaves_each_plot_room_under_its_legend(
    ui: ArchiveUI, page: Page, width: int
) -> None:
    at(page, width)
    page.goto(f"{ui.base}/compare?by=run&" + "&".join(f"run={r}" for r in REPLICAS))
    page.wait_for_selector("#compare-charts .main-svg")
    page.wait_for_timeout(500)
    charts: list[dict[str, Any]] = page.evaluate(PLOT_AREAS)
    assert len(charts) >= 6
    for chart in charts:
        plot_top, plot_bottom = chart["plot"]
        assert plot_bottom - plot_top >= 150, chart  # was 76 px
        assert chart["legend"][1] <= plot_top + SLACK, chart  # the legend is above it
    charts_in_their_cards(page, f"compare at {width}")
    assert page_width(page) <= width
    page.locator("#compare-charts").scroll_into_view_if_needed()
    shot(page, "compare-8-runs", width)


# --- 28.15: truth in the timeline and the analyses ------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_the_timeline_gives_the_operator_its_wait(ui: ArchiveUI, page: Page, width: int) -> None:
    at(page, width)
    page.goto(f"{ui.base}/runs/{HUMAN}/timeline?cycle=1")
    assert page.locator("#time-operator").inner_text() == f"{REPLY_AFTER_S:.2f} s"
    assert page.locator("#time-tool").inner_text() == "0 ms"  # the wait is no tool's
    wait_span = page.locator("#timeline tr.span-operator")
    assert wait_span.count() == 1
    assert wait_span.get_attribute("data-duration") == str(REPLY_AFTER_S)
    assert "until the reply" in wait_span.locator("td.label").inner_text()
    page.wait_for_selector("#chart-time .main-svg")
    shares = page.evaluate(
        "() => Object.fromEntries(document.getElementById('chart-time').data"
        ".map(t => [t.name, t.y]))"
    )
    assert shares["operator"] == [REPLY_AFTER_S, TIMEOUT_S], shares
    assert shares["tool calls"] == [0, 0], shares
    assert page_width(page) <= width
    shot(page, "timeline-operator", width)
    page.goto(f"{ui.base}/runs/{HUMAN}/timeline?cycle=2")
    assert page.locator("#time-operator").inner_text() == f"{TIMEOUT_S / 60:.1f} min"
    label = page.locator("#timeline tr.span-operator td.label").inner_text()
    assert "no reply in time" in label


@pytest.mark.parametrize("width", WIDTHS)
def test_a_timed_out_reply_is_not_read_as_the_operators_words(
    ui: ArchiveUI, page: Page, width: int
) -> None:
    at(page, width)
    page.goto(f"{ui.base}/runs/{HUMAN}")
    rows = page.locator("#operator-table tbody tr")
    assert rows.count() == 2
    person, timed_out = rows.nth(0), rows.nth(1)
    assert person.locator("td.replied-by").inner_text() == "operator"
    assert person.locator(".intent").inner_text() == "request"
    assert person.locator(".timed-out").count() == 0
    assert timed_out.locator("td.replied-by").inner_text() == "nobody (timed out)"
    assert "not the operator's words" in timed_out.locator(".timed-out").inner_text()
    assert timed_out.locator("pre.text").nth(1).inner_text() == AUTO_REPLY  # shown as given
    summary = timed_out.locator(".summary").inner_text()
    assert summary.startswith(f"No reply from the operator within {TIMEOUT_S:g} s"), summary
    assert "The operator says" not in summary and "The operator chats" not in summary
    assert timed_out.locator(".persistence").inner_text() == "0.00"
    assert page_width(page) <= width
    page.locator("#operator-table").scroll_into_view_if_needed()
    shot(page, "timed-out-reply", width)


def search_model(ui: ArchiveUI) -> str:
    _, _, body = ui.get("/search.json")
    state: str = json.loads(body)["search_model"]
    return state


@pytest.mark.parametrize("width", WIDTHS)
def test_semantic_search_says_what_it_is_doing(ui: ArchiveUI, page: Page, width: int) -> None:
    # No search was made in this dashboard: it loads its model when it starts. (A
    # generous guard against a hang, not a bound on how long loading takes.)
    wait(lambda: search_model(ui) == "ready", 300, "the search model to be loaded")
    at(page, width)
    page.goto(f"{ui.base}/search")
    assert page.locator("#search-model").get_attribute("data-state") == "ready"
    assert "ready" in page.locator("#search-model").inner_text()
    page.select_option("#search-mode", "semantic")
    page.fill("#search-q", "the tides come back")
    page.fill("#search-form input[name=run]", HUMAN)  # a few texts to embed, not hundreds
    status = page.locator("#search-status")
    assert not status.is_visible()
    submitted = page.evaluate(  # what the page shows the moment the form is sent
        "() => { document.getElementById('search-form').requestSubmit();"
        " const s = document.getElementById('search-status');"
        " return [s.hidden, s.textContent,"
        " document.getElementById('search-submit').disabled]; }"
    )
    assert submitted == [False, "Searching by meaning…", True], submitted
    page.wait_for_selector("#search-hits li.hit")
    assert "mode=semantic" in page.url
    scores = [float(s) for s in page.locator("#search-hits .score").all_inner_texts()]
    assert scores and scores == sorted(scores, reverse=True)
    assert page_width(page) <= width
    shot(page, "search-semantic", width)
    page.goto(f"{ui.base}/search")
    page.evaluate("document.getElementById('search-model').dataset.state = 'loading'")
    page.select_option("#search-mode", "semantic")
    page.fill("#search-q", "notes")
    page.fill("#search-form input[name=run]", HUMAN)
    loading = page.evaluate(
        "() => { document.getElementById('search-form').requestSubmit();"
        " return document.getElementById('search-status').textContent; }"
    )
    assert loading.startswith("Loading the embedding model, then searching"), loading
    page.wait_for_selector("#search-hits")
