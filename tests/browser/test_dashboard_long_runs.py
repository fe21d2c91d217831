"""The dashboard's defects of issue 19 (1 to 10), its long runs and its timeline, in a
real browser: the real ``contreact-ui`` process over archived runs made by the pure
core (``tests/support/dash_runs.py``): a 10-, a 100- and a 1,000-cycle run, a failed
one, one still running, one whose model was substituted, one of empty reflections, one
of hostile text. Each test names the defect it holds; screenshots at 1,400 and 900 px
go to test-artifacts/browser/ as ``defect-*-1400.png`` and ``defect-*-900.png`` (the
first 3,000 px of a page)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Dialog, FloatRect, Page

from tests.support import hostile
from tests.support.dash_runs import LLM_SECONDS, ArchiveUI, hostile_log, run_log, write_runs
from tests.support.sim import say
from tests.support.stack import own_database
from tests.support.ui_stack import ARTIFACTS, shot

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

WIDTHS = (1400, 900)


@pytest.fixture(scope="module")
def ui(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArchiveUI]:
    data = tmp_path_factory.mktemp("dash-runs")
    runs = {
        "paper-10": run_log("paper-10", 10),
        "long-100": run_log("long-100", 100),
        "long-1000": run_log("long-1000", 1000),
        "failed-run": run_log("failed-run", 5, fail_in=3),
        "live-run": run_log("live-run", 10, stop_after=40),
        "swapped": run_log("swapped", 3, ran_model="gemma-3-270m-q4_k_m"),
        "empty-refl": run_log(
            "empty-refl", 3, reply=lambda task: say(""), diversity={"enabled": False}
        ),
        "hostile-run": hostile_log("hostile-run"),
    }
    write_runs(data / "runs", runs)
    server = ArchiveUI(data, own_database(redis_server))
    try:
        server.wait_ready()
        statuses = {run_id: "completed" for run_id in runs}
        statuses |= {"failed-run": "failed", "live-run": "running"}
        server.wait_projected(statuses)
        yield server
    finally:
        server.stop()


SHOT_HEIGHT = 3000
"""Screenshots show at most the page's first 3,000 px (a 1,000-cycle run's page is
tens of thousands: shooting all of it times out on a busy machine)."""


def both_widths(page: Page, name: str) -> None:
    """Screenshots of the page at 1,400 px and at 900 px (then back to 1,400)."""
    for width in WIDTHS:
        # The viewport as tall as what is shot: a full-page screenshot of a smaller one
        # resizes it while shooting, and Plotly's charts are caught relaying out.
        page.set_viewport_size({"width": width, "height": 1000})
        height = page.evaluate("document.documentElement.scrollHeight")
        page.set_viewport_size({"width": width, "height": min(max(height, 1000), SHOT_HEIGHT)})
        page.wait_for_timeout(300)  # Plotly relays its charts out on resize
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"defect-{name}-{width}.png"))
    page.set_viewport_size({"width": WIDTHS[0], "height": 1000})


def chart(page: Page, chart_id: str) -> None:
    page.wait_for_selector(f"#{chart_id} .main-svg")


def boxes_overlap(a: FloatRect | None, b: FloatRect | None) -> bool:
    assert a and b, "both elements are drawn"
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_defect_1_table1_gives_spread_and_says_what_it_mixes(ui: ArchiveUI, page: Page) -> None:
    page.goto(ui.base + "/compare?experiment=dash&by=model")
    warnings = page.locator("#table1-warnings").inner_text()
    assert "100" in warnings and "10 cycles" in warnings  # mixed cycle counts said
    assert "failed" in warnings and "running" in warnings  # runs left out said
    ours = page.locator('#table1 tr[data-metric="memory_tools"] td.ours').all_inner_texts()
    assert any("±" in cell for cell in ours), ours  # an SD where a group has two runs
    assert all("n=" in cell for cell in ours), ours
    groups = page.locator("#groups").inner_text()
    assert "left out of Table 1: failed-run (failed), live-run (running)" in groups
    both_widths(page, "1-table1")


def test_defect_2_unfinished_cycles_are_gaps_not_zeros(ui: ArchiveUI, page: Page) -> None:
    for run_id, cycle, what in [("failed-run", 3, "failed"), ("live-run", None, "running")]:
        page.goto(f"{ui.base}/runs/{run_id}")
        chart(page, "chart-lengths")
        marked = page.get_attribute("#chart-lengths", "data-unfinished") or ""
        assert marked.endswith(f":{what}"), (run_id, marked)
        open_cycle = int(marked.split(":")[0])
        assert cycle is None or open_cycle == cycle
        values = page.evaluate(
            "([id, c]) => document.getElementById(id).data.map(t => t.y[t.x.indexOf(c)])",
            ["chart-lengths", open_cycle],
        )
        assert values and all(v is None for v in values), (run_id, values)
        tools = page.evaluate(
            "c => document.getElementById('chart-tools').data.map(t => t.y[t.x.indexOf(c)])",
            open_cycle,
        )
        assert all(v is None for v in tools), tools
        labels = svg_texts(page, "#chart-lengths .annotation-text")
        assert what in labels, labels
        both_widths(page, f"2-{what}")


def svg_texts(page: Page, selector: str) -> list[str]:
    texts: list[str] = page.evaluate(
        "s => [...document.querySelectorAll(s)].map(e => e.textContent)", selector
    )
    return texts


def x_tick_count(page: Page, chart_id: str) -> int:
    return page.locator(f"#{chart_id} .xtick text").count()


@pytest.mark.parametrize("run_id", ["long-100", "long-1000"])
def test_defect_3_long_runs_stay_readable(ui: ArchiveUI, page: Page, run_id: str) -> None:
    cycles = int(run_id.split("-")[1])
    page.goto(f"{ui.base}/runs/{run_id}")
    for chart_id in ["chart-tools", "chart-lengths", "chart-tokens", "chart-llm"]:
        chart(page, chart_id)
        assert 2 <= x_tick_count(page, chart_id) <= 13, chart_id
    chart(page, "chart-similarity")
    assert page.locator("#similarity-band-note").is_visible()
    box = page.locator("#chart-similarity").bounding_box()
    assert box and box["height"] <= 800, box
    assert 2 <= x_tick_count(page, "chart-similarity") <= 13
    assert page.locator("#reflections li").count() == 100  # a window of cycles in full
    assert page.locator("#cycles-table tbody tr").count() == 100
    if cycles > 100:
        page.locator("#window-pager-cycles a").first.click()  # cycles 1 to 100
        assert page.locator("#cycles-table tbody tr").first.get_attribute("id") == "cycle-1"
    data = page.evaluate("document.getElementById('page-data').textContent.length")
    assert data < 2_000_000
    both_widths(page, f"3-run-{cycles}")
    page.goto(f"{ui.base}/runs/{run_id}/events")
    assert page.locator("#by-cycle-note").is_visible()
    assert set(page.locator("#events-table tbody tr td:nth-child(4)").all_inner_texts()) == {"0"}
    page.locator("#next-cycle").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert page.locator("#pager-cycle").inner_text() == "1"
    assert set(page.locator("#events-table tbody tr td:nth-child(4)").all_inner_texts()) == {"1"}
    assert page.locator("#events-table tbody tr").count() < 40
    both_widths(page, f"3-events-{cycles}")


def test_defect_4_empty_states(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/empty-refl")
    empty = page.locator("#similarity-empty")
    assert empty.is_visible() and "no reflection has been embedded" in empty.inner_text()
    assert page.locator("#chart-similarity").count() == 0
    chart(page, "chart-tools")
    assert any("none was called" in t for t in svg_texts(page, "#chart-tools .gtitle"))
    both_widths(page, "4-empty")


def test_defect_5_a_substituted_model_is_a_warning(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/swapped")
    warning = page.locator("#model-warning")
    assert warning.is_visible()
    text = warning.inner_text()
    assert "gemma-3-270m-q4_k_m ran INSTEAD OF the configured gemma3:270m" in text
    assert page.locator("#run-model").inner_text() == "gemma-3-270m-q4_k_m"
    both_widths(page, "5-run")
    page.goto(f"{ui.base}/compare?run=swapped&run=paper-10&by=model")
    headers = page.locator("#table1 thead th.ours").all_inner_texts()
    assert "gemma-3-270m-q4_k_m" in headers and "gemma3:270m" not in headers
    groups = page.locator("#groups").inner_text()
    assert "ran gemma-3-270m-q4_k_m, configured gemma3:270m" in groups
    assert "INSTEAD OF" in page.locator("#table1-warnings").inner_text()
    both_widths(page, "5-compare")


@pytest.fixture
def quiet_page(browser: Browser) -> Iterator[Page]:
    """A page whose console may say "404" (the ``page`` fixture fails on any console
    error, and a browser logs every 404 it loads as one)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"the page's scripts failed: {errors}"


@pytest.mark.parametrize(
    "path",
    [
        "/no/such/page",
        "/runs/..%2F..%2Fetc",
        "/runs/a/b/c/d",
        "/%3Cscript%3Ewindow.__pwned=1%3C%2Fscript%3E%3Cimg%20src=x%20onerror=alert(1)%3E",
    ],
)
def test_defect_6_unknown_paths_get_the_sites_404(
    ui: ArchiveUI, quiet_page: Page, path: str
) -> None:
    page = quiet_page
    response = page.goto(ui.base + path)
    assert response is not None and response.status == 404
    assert "text/html" in (response.headers.get("content-type") or "")
    assert "there is no page at" in page.locator("#error-message").inner_text()
    assert page.locator("a", has_text="Back to the runs").is_visible()
    assert page.evaluate("window.__pwned") is None and page.locator("img[src=x]").count() == 0
    status, headers, body = ui.get(path + ".json")
    assert status == 404 and headers["content-type"].startswith("application/json"), body
    both_widths(page, "6-" + re.sub(r"[^a-z]+", "-", path.lower()).strip("-")[:40])


def test_defect_7_tables_fit_their_page(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/long-100/replay")
    heads = page.locator("table.metrics thead th").all_inner_texts()
    assert heads and not any("_" in h for h in heads), heads
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1400, width
    table = page.locator("table.metrics").bounding_box()
    main = page.locator("main").bounding_box()
    assert table and main and table["x"] + table["width"] <= main["x"] + main["width"] + 1
    both_widths(page, "7-replay")
    page.set_viewport_size({"width": 900, "height": 1000})
    page.goto(f"{ui.base}/runs")
    assert page.evaluate("document.documentElement.scrollWidth") <= 900
    shot(page, "defect-7-runs-900")
    page.set_viewport_size({"width": 1400, "height": 1000})
    shot(page, "defect-7-runs-1400")


def test_defect_8_charts_read_cleanly(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/paper-10")
    chart(page, "chart-llm")
    calls = svg_texts(page, "#chart-llm .y2tick text")
    assert calls and len(calls) == len(set(calls)), calls  # no 2, 2, 3, 3
    for chart_id in ["chart-tools", "chart-lengths", "chart-tokens", "chart-llm"]:
        chart(page, chart_id)
        legend = page.locator(f"#{chart_id} .legend").bounding_box()
        for title in page.locator(f"#{chart_id} .g-xtitle, #{chart_id} .g-ytitle").all():
            assert not boxes_overlap(legend, title.bounding_box()), chart_id
    styles = page.evaluate(
        "document.getElementById('chart-lengths').data"
        ".map(t => (t.line || {}).dash + '/' + (t.marker || {}).symbol)"
    )
    assert len(styles) == 3 and len(set(styles)) == 3, styles  # equal series stay visible
    both_widths(page, "8-charts")


def test_defect_9_event_log_times_durations_and_task_ids(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/paper-10/events?cycle=3")
    times = page.locator("#events-table tbody td:nth-child(2)").all_inner_texts()
    assert times and all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", t) for t in times), times
    answer = page.locator("#events-table tr.type-LLMResponded").first
    assert answer.locator("td.took").inner_text() == f"{LLM_SECONDS:.2f} s"
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        for code in page.locator("#events-table code.task").all()[:10]:
            box = code.bounding_box()
            assert box and box["height"] < 24, (width, box)  # one line
    page.set_viewport_size({"width": 1400, "height": 1000})
    both_widths(page, "9-events")


def test_defect_10_responses_are_compressed(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/long-100")
    chart(page, "chart-tools")
    sizes: dict[str, Any] = page.evaluate(
        "Object.fromEntries(performance.getEntries()"
        ".filter(e => e.name.includes('plotly.min.js') || e.entryType === 'navigation')"
        ".map(e => [e.entryType, [e.encodedBodySize, e.decodedBodySize]]))"
    )
    plotly_sent, plotly_size = sizes["resource"]
    assert plotly_size > 3_000_000 and plotly_sent < plotly_size / 2, sizes
    page_sent, page_size = sizes["navigation"]
    assert page_sent < page_size / 2, sizes
    status, headers, _ = ui.get("/static/plotly.min.js", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("content-encoding") == "gzip"
    both_widths(page, "10-compressed")


def test_the_timeline_shows_where_a_cycles_time_went(ui: ArchiveUI, page: Page) -> None:
    page.goto(f"{ui.base}/runs/paper-10")
    page.locator("nav.tabs a", has_text="Timeline").click()
    assert page.locator("#cycle-total").is_visible()
    page.goto(f"{ui.base}/runs/paper-10/timeline?cycle=3")
    llm = page.locator("#timeline tr.span-llm")
    assert llm.count() == 3  # write, message to the operator, reflection
    assert {llm.nth(i).get_attribute("data-duration") for i in range(3)} == {str(LLM_SECONDS)}
    assert page.locator("#timeline tr.span-tool").count() == 1  # the write
    assert page.locator("#timeline tr.span-operator").count() == 1  # the message, its reply
    assert page.locator("#time-llm").inner_text() == f"{3 * LLM_SECONDS:.2f} s"
    chart(page, "chart-time")
    assert page.get_attribute("#chart-time", "data-traces") == "4"
    page.locator("#next-cycle").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert "cycle=4" in page.url
    both_widths(page, "time-timeline")
    page.goto(f"{ui.base}/runs/failed-run/timeline?cycle=3")
    assert page.locator("#timeline tr.span-failed").count() == 1
    page.goto(f"{ui.base}/runs/long-1000/timeline")
    chart(page, "chart-time")
    assert x_tick_count(page, "chart-time") <= 13
    both_widths(page, "time-timeline-1000")


def test_hostile_text_stays_inert_in_the_changed_views(ui: ArchiveUI, page: Page) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    paths = [
        "/runs/hostile-run",
        "/runs/hostile-run/events",
        "/runs/hostile-run/events?cycle=1",
        "/runs/hostile-run/events/8",
        "/runs/hostile-run/replay",
        "/runs/hostile-run/timeline?cycle=1",
        "/runs/hostile-run/timeline?cycle=2",
        "/compare?run=hostile-run&run=paper-10",
    ]
    for number, path in enumerate(paths):
        page.goto(ui.base + path)
        for details in page.locator("details").all()[:60]:
            details.evaluate("d => d.open = true")
        page.evaluate(
            "document.querySelectorAll('main *').forEach(e => "
            "e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"
        )
        page.wait_for_timeout(150)
        assert page.evaluate("window.__pwned") is None, path
        for selector in ["img[src=x]", "b[onmouseover]", "[onerror]", "[onload]", "svg[onload]"]:
            assert page.locator(selector).count() == 0, (path, selector)
        scripts = page.evaluate("[...document.scripts].map(s => s.src || s.type)")
        assert set(scripts) <= {
            f"{ui.base}/static/app.js",
            f"{ui.base}/static/plotly.min.js",
            "application/json",
        }, (path, scripts)
        text = page.evaluate("document.body.innerText")
        assert "\x1b" not in text and "\u202e" not in text, path
        shot(page, f"defect-hostile-{number}")
    page.goto(f"{ui.base}/runs/hostile-run/timeline?cycle=1")
    labels = page.locator("#timeline td.label").all_inner_texts()
    assert any(hostile.TOOL in label for label in labels), labels  # shown, as text
    assert not dialogs
