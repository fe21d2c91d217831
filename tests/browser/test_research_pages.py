"""The experiment page, search, the sortable runs table and the composer started from
a run, in a real browser on runs of the real services (scripted backend): a 2 x 2
experiment of hostile agent text and a 100-cycle run, both run with the CLI. Each page
is clicked through, its hostile text checked inert, and shot at 1,400 and 900 px
(``test-artifacts/browser/``)."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Dialog, Locator, Page

from contreact_events.config import parse_run_config
from contreact_events.config.overrides import changed_settings
from tests.support import hostile
from tests.support.ui_stack import UIStack, shot, wait

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

EXP = "hostile-2x2"
REPLICAS = [f"{EXP}-{label}-{letter}" for label in ("alpha", "beta") for letter in "AB"]
LONG = "long-100"
NEEDLE = "zebracorn"
WIDTHS = (1400, 900)


def shots(page: Page, name: str) -> None:
    """The page at both widths (the 900 px one last; the width is then set back)."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        shot(page, f"{name}-{width}")
    page.set_viewport_size({"width": WIDTHS[0], "height": 1000})


def script() -> dict[str, Any]:
    replies = hostile.replies()
    replies[-1] = {"content": f"{hostile.REFLECTION} The {NEEDLE.upper()} again."}
    return {"repeat": True, "replies": replies}


@pytest.fixture(scope="module")
def experiment(ui_stack: UIStack) -> UIStack:
    """The 2 x 2 experiment, run to its end."""
    design = {
        "experiment": EXP,
        "replicas": 2,
        "cycle_count": 2,
        "backend": "scripted",
        "operator": {"mode": "auto"},
        "deadlines": {"memory_s": 33.0},
        "limits": {"tool_output_chars": 1234},
        "model_options": {"seed": 7},
        "script": script(),
        "models": [
            {"model_name": "scripted-a", "label": "alpha"},
            {"model_name": "scripted-b", "label": "beta", "model_options": {"temperature": 0.3}},
        ],
    }
    path = ui_stack.workdir / f"{EXP}.yaml"
    path.write_text(yaml.safe_dump(design, allow_unicode=True))
    result = ui_stack.cli("experiment", "run", str(path), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for run_id in REPLICAS:
        wait(lambda r=run_id: ui_stack.run_row(r).get("status") == "completed", 60, run_id)
    return ui_stack


def inert(page: Page, stack: UIStack, label: str) -> None:
    """No script of the agent's ran, no element of its text exists, no escape shows."""
    page.evaluate(
        "document.querySelectorAll('main *').forEach(e => "
        "e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"
    )
    page.wait_for_timeout(100)
    assert page.evaluate("window.__pwned") is None, label
    for selector in [
        "img[src=x]",
        "b[onmouseover]",
        "[onerror]",
        "[onload]",
        "a[href^=javascript]",
    ]:
        assert page.locator(selector).count() == 0, (label, selector)
    scripts = page.evaluate("[...document.scripts].map(s => s.src || s.type)")
    assert set(scripts) <= {f"{stack.base}/static/app.js", "application/json"}, (label, scripts)
    text = page.evaluate("document.body.innerText")
    assert "\x1b" not in text and "\u202e" not in text, label


@pytest.fixture
def dialogs(page: Page) -> Iterator[list[str]]:
    seen: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        seen.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield seen
    assert not seen, seen


def test_the_experiment_page(
    experiment: UIStack, page: Page, dialogs: list[str], tmp_path: Path
) -> None:
    stack = experiment
    page.goto(f"{stack.base}/runs?experiment={EXP}")
    page.locator("#runs-table td[data-field=experiment] a").first.click()
    # the new page loaded, not only its address: on a loaded machine the table was
    # read while the page was still arriving (0 rows)
    page.wait_for_url(f"**/experiments/{EXP}")
    rows = page.locator("#replicas-table tbody tr")
    assert rows.count() == 4
    assert (
        page.locator("#replicas-table td[data-field=status]").all_inner_texts() == ["completed"] * 4
    )
    assert page.locator("#replicas-table td[data-field=cycle]").all_inner_texts() == ["2/2"] * 4
    design = page.locator("#design-table").inner_text()
    assert "deadlines.memory_s" in design and "limits.tool_output_chars" in design
    assert "model_options.temperature" in design  # beta's own
    assert "model_options.seed" in page.locator("#per-replica").inner_text()
    inert(page, stack, "experiment")
    shots(page, "experiment")
    rows.first.locator("td[data-field=siblings] a").click()
    page.wait_for_url(f"**/runs/{EXP}-alpha-B")
    page.go_back()
    with page.expect_download() as table1:
        page.locator("#downloads a", has_text="Table 1").click()
    target = tmp_path / table1.value.suggested_filename
    table1.value.save_as(target)
    table = list(csv.DictReader(io.StringIO(target.read_text())))
    # by the experiment's labels, as the report and `analyze` group its runs
    assert {r["model"] for r in table if r["source"] == "this experiment"} == {"alpha", "beta"}
    with page.expect_download() as exports:
        page.locator("#downloads a", has_text="zip").click()
    target = tmp_path / exports.value.suggested_filename
    exports.value.save_as(target)
    with zipfile.ZipFile(target) as archive:
        assert {f"{EXP}/{r}.jsonl" for r in REPLICAS} <= set(archive.namelist())


def test_the_experiment_page_of_a_long_run_is_live(experiment: UIStack, page: Page) -> None:
    stack = experiment
    long = {
        "run_id": LONG,
        "model_name": "scripted-long",
        "cycle_count": 100,
        "backend": "scripted",
        "experiment": "long-exp",
        "operator": {"mode": "auto"},
        "script": {
            "repeat": True,
            "replies": [
                {"tool_calls": [{"name": "write", "arguments": {"key": "k", "value": "v{cycle}"}}]},
                {"content": "Cycle {cycle}: the long run goes on, slowly.", "latency_ms": 100},
            ],
        },
    }
    (stack.workdir / "long.yaml").write_text(yaml.safe_dump(long))
    stack.cli("run", str(stack.workdir / "long.yaml"), "--detach", check=True)
    wait(lambda: stack.run_row(LONG).get("cycle", 0) >= 2, 60, "the long run to go")
    if stack.run_row(LONG)["status"] == "completed":
        pytest.fail("the 100-cycle run ended before its page was watched: slow it down")
    page.goto(f"{stack.base}/experiments/long-exp")
    page.wait_for_selector("#live.on")
    cell = page.locator("#replicas-table td[data-field=cycle]")
    before = cell.inner_text()
    page.evaluate("window.__samePage = true")
    wait(lambda: cell.inner_text() != before, 30, "the cycle to move on the page")
    assert page.evaluate("window.__samePage") is True  # updated, not reloaded
    shots(page, "experiment-live")
    wait(lambda: stack.run_row(LONG).get("status") == "completed", 240, "the long run to end")
    page.goto(f"{stack.base}/experiments/long-exp")
    assert page.locator("#replicas-table td[data-field=cycle]").inner_text() == "100/100"
    assert "at cycle 100" in page.locator("#replicas-table td[data-field=advisory]").inner_text()


def follow(page: Page, link: Locator, timeout: float = 30_000) -> None:
    """Click what leads to another page and wait for that page: a count or a URL read
    right after the click reads the page being left (a search found nothing, once)."""
    with page.expect_navigation(timeout=timeout):
        link.click(timeout=timeout)


def test_search_links_each_result_to_its_cycle(
    experiment: UIStack, page: Page, dialogs: list[str]
) -> None:
    stack = experiment
    page.goto(stack.base + "/runs")
    page.get_by_role("link", name="Search", exact=True).click()
    page.fill("#search-q", NEEDLE)
    follow(page, page.locator("#search-submit"))
    hits = page.locator("#search-hits li.hit")
    assert hits.count() == 8  # 4 replicas x 2 cycles
    assert page.locator("#search-hits mark").first.inner_text() == NEEDLE.upper()
    inert(page, stack, "search")
    shots(page, "search-keyword")
    first = hits.first
    cycle = first.locator(".hit-cycle").inner_text()
    follow(page, first.locator(".hit-event"))
    assert page.locator("h2 .etype").inner_text() == "ReflectionRecorded"
    page.go_back()
    follow(page, page.locator("#search-hits li.hit").first.locator(".hit-cycle"))
    assert f"cycle={cycle.split()[-1]}" in page.url
    for q in ("<script>", "onmouseover", "svg onload", "javascript:"):
        page.goto(stack.base + "/search")
        page.fill("#search-q", q)
        follow(page, page.locator("#search-submit"))
        assert page.locator("#search-hits mark").count() >= 1, q
        inert(page, stack, f"search {q}")
    page.goto(stack.base + "/search")
    page.fill("#search-q", "a note about tides and the sea")
    page.select_option("#search-mode", "semantic")
    page.check("input[name=kind][value=reflection]")
    follow(page, page.locator("#search-submit"), 180_000)  # the first loads the model
    scores = [float(s) for s in page.locator("#search-hits .score").all_inner_texts()]
    assert scores and scores == sorted(scores, reverse=True)
    inert(page, stack, "semantic search")
    shots(page, "search-semantic")


def test_runs_sort_by_a_column_and_filter_by_day(
    experiment: UIStack, page: Page, dialogs: list[str]
) -> None:
    stack = experiment
    page.goto(stack.base + "/runs")
    page.locator("#runs-table th[data-sort=llm_calls] a").click()
    page.wait_for_url(lambda url: "sort=llm_calls" in url and "order=desc" in url)
    values = [
        int(v) for v in page.locator("#runs-table td[data-field=llm_calls]").all_inner_texts()
    ]
    assert values == sorted(values, reverse=True)
    page.locator("#runs-table th[data-sort=llm_calls] a").click()
    page.wait_for_url(lambda url: "order=asc" in url)
    values = [
        int(v) for v in page.locator("#runs-table td[data-field=llm_calls]").all_inner_texts()
    ]
    assert values == sorted(values)
    page.select_option("select[name=model]", "scripted-b")
    day = page.locator("#runs-table td[data-field=created_at]").first.inner_text()[:10]
    page.fill("input[name=since]", day)
    page.fill("input[name=until]", day)
    page.locator("form.filters button").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert "sort=llm_calls" in page.url  # the order is kept
    runs = page.locator("#runs-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert sorted(runs) == [f"{EXP}-beta-A", f"{EXP}-beta-B"]
    inert(page, stack, "runs")
    shots(page, "runs-sorted")
    page.fill("input[name=since]", "2999-01-01")
    page.fill("input[name=until]", "")
    page.locator("form.filters button").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert page.locator("#runs-table tbody tr.empty-row").count() == 1


def test_the_composer_starts_from_a_run(
    experiment: UIStack, page: Page, dialogs: list[str], tmp_path: Path
) -> None:
    stack = experiment
    source = f"{EXP}-beta-B"
    page.goto(f"{stack.base}/runs/{source}")
    page.get_by_role("link", name="start a new run from this config").click()
    assert source in page.locator("#started-from").inner_text()
    assert page.input_value("input[name='deadlines.memory_s']") == "33.0"
    assert page.input_value("input[name='limits.tool_output_chars']") == "1234"
    assert page.input_value("input[name='model_options.temperature']") == "0.3"
    assert page.input_value("input[name=run_id]") == ""
    inert(page, stack, "compose from a run")
    shots(page, "compose-from-run")
    page.fill("input[name=run_id]", "again-1")
    page.locator("#compose-submit").click()
    with page.expect_download() as download:
        page.locator("#download").click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    result = stack.cli("run", str(target), timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    wait(lambda: stack.run_row("again-1").get("status") == "completed", 30, "projection")
    before = stack.get_json(f"/runs/{source}/events/1.json")["payload"]["config"]
    after = stack.get_json("/runs/again-1/events/1.json")["payload"]["config"]
    assert changed_settings(parse_run_config(before), parse_run_config(after)) == {
        "run_id": (source, "again-1")
    }
