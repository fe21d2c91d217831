"""The dashboard in a real browser, on runs of the real services (scripted backend):
every page updates while a run is live, without a reload; compare is clicked through;
a composed config is downloaded and run with the CLI; hostile agent text stays inert.
Screenshots of each page go to test-artifacts/browser/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Dialog, Page

from tests.support import hostile
from tests.support.ui_stack import UIStack, shot, wait

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.redis]

LIVE = "live-browser"
LIVE_CYCLES = 14


def write(stack: UIStack, name: str, config: dict[str, Any]) -> Path:
    path = stack.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    return path


def live_config() -> dict[str, Any]:
    def reply(content: str = "", *calls: dict[str, Any]) -> dict[str, Any]:
        return {"content": content, "tool_calls": list(calls), "latency_ms": 600}

    return {
        "run_id": LIVE,
        "model_name": "scripted-live",
        "cycle_count": LIVE_CYCLES,
        "backend": "scripted",
        "experiment": "browser",
        "operator": {"mode": "auto"},
        "script": {
            "repeat": True,
            "replies": [
                reply(
                    "",
                    {"name": "write", "arguments": {"key": "note-{cycle}", "value": "v{cycle}"}},
                    {"name": "list", "arguments": {}},
                ),
                reply("", {"name": "send_message_to_operator", "arguments": {"message": "hi"}}),
                reply("Cycle {cycle}: notes about tides, then primes, then {cycle} again."),
            ],
        },
    }


def watch(page: Page, counter: str) -> int:
    """Mark the page (a reload would drop the mark) and read its update counter."""
    page.evaluate("window.__samePage = true")
    return int(page.evaluate(f"Number(document.body.dataset.{counter} || 0)"))


def updated(page: Page, counter: str, before: int) -> bool:
    now = int(page.evaluate(f"Number(document.body.dataset.{counter} || 0)"))
    return now > before


def test_every_page_updates_while_the_run_is_live(ui_stack: UIStack, page: Page) -> None:
    ui_stack.cli("run", str(write(ui_stack, LIVE, live_config())), "--detach", check=True)
    wait(lambda: ui_stack.run_row(LIVE).get("cycle", 0) >= 1, what="the live run to start")
    pages = [
        ("runs", "/runs", "updates", "#runs-table"),
        ("run", f"/runs/{LIVE}", "refreshed", "#cycles-table"),
        ("memory", f"/runs/{LIVE}/memory", "refreshed", "table.memory"),
        ("events", f"/runs/{LIVE}/events?limit=5000", "refreshed", "#events-table"),
        ("replay", f"/runs/{LIVE}/replay", "refreshed", "#total"),
        ("compare", f"/compare?run={LIVE}", "refreshed", "#table1"),
    ]
    for name, path, counter, region in pages:
        assert ui_stack.run_row(LIVE)["status"] != "completed", f"the run ended before {name}"
        page.goto(ui_stack.base + path)
        page.wait_for_selector("#live.on")
        text_before = page.inner_text(region)
        before = watch(page, counter)
        wait(lambda c=counter, b=before: updated(page, c, b), 20, f"{name} to update")
        wait(lambda r=region, t=text_before: page.inner_text(r) != t, 20, f"{name} to change")
        assert page.evaluate("window.__samePage") is True, f"{name} reloaded instead"
        shot(page, f"live-{name}")
    wait(lambda: ui_stack.run_row(LIVE).get("status") == "completed", 120, "the run to end")
    page.goto(f"{ui_stack.base}/runs/{LIVE}")
    assert page.locator("#reflections li").count() == LIVE_CYCLES
    assert page.locator("#run-status").inner_text() == "completed"
    charts = ["chart-tools", "chart-lengths", "chart-tokens", "chart-llm", "chart-similarity"]
    for chart in charts:
        assert page.locator(f"#{chart} .main-svg").count() >= 1, chart
    assert page.locator("#operator-table tbody tr").count() == LIVE_CYCLES
    shot(page, "run")
    for name, path in [
        ("runs", "/runs"),
        ("memory", f"/runs/{LIVE}/memory?cycle=3"),
        ("events", f"/runs/{LIVE}/events?type=LLMRequested&type=LLMResponded"),
        ("replay", f"/runs/{LIVE}/replay?cycle=5"),
        ("compose", "/compose"),
    ]:
        page.goto(ui_stack.base + path)
        shot(page, name)


def test_event_log_links_a_prompt_to_its_answer(ui_stack: UIStack, page: Page) -> None:
    wait(lambda: ui_stack.run_row(LIVE).get("status") == "completed", 120, "the live run")
    page.goto(f"{ui_stack.base}/runs/{LIVE}/events?type=LLMRequested")
    page.locator("#events-table tbody tr").first.locator("summary").click()
    first = page.locator("#events-table tbody tr").first
    assert '"task_id"' in first.locator("pre.payload").inner_text()  # the payload, expanded
    first.get_by_text("from this request to its answer").click()
    assert page.locator("h2 .etype").inner_text() == "LLMRequested"
    page.locator("#related a", has_text="LLMResponded").click()
    assert page.locator("h2 .etype").inner_text() == "LLMResponded"
    assert '"message"' in page.locator("pre.payload").inner_text()
    page.go_back()
    page.locator("#prompt-link").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert "The prompt of the next LLM call" in page.locator("#prompt").inner_text()
    assert page.locator("ol.prompt li.role-system").count() == 1
    shot(page, "replay-prompt")
    before = page.locator("#replay-cycle").inner_text()
    page.keyboard.press("End")
    page.wait_for_load_state()
    assert page.locator("#replay-phase").inner_text() == "done"
    assert page.locator("#replay-cycle").inner_text() != before


def test_compare_is_clicked_through(ui_stack: UIStack, page: Page) -> None:
    other = {**live_config(), "run_id": "second-model", "model_name": "scripted-other"}
    other["cycle_count"] = 3
    ui_stack.cli("run", str(write(ui_stack, "second", other)), check=True, timeout=180)
    wait(lambda: ui_stack.run_row("second-model").get("status") == "completed", 30, "projection")
    page.goto(ui_stack.base + "/runs?experiment=browser")
    page.get_by_text("Compare these").click()
    # The new page, loaded: the URL changes when the navigation commits, before the page
    # (Table 1 and Table 2 computed by the server, seconds under load) has arrived.
    page.wait_for_url("**/compare?experiment=browser")
    headers = page.locator("#table1 thead th.ours").all_inner_texts()
    assert {"scripted-live", "scripted-other"} <= set(headers)
    page.select_option("select[name=by]", "run")
    page.locator("#compare-submit").click()
    page.wait_for_url("**by=run**")  # the form's page, loaded (not the one it left)
    table = page.locator("#table1 thead th.ours")
    wait(lambda: {LIVE, "second-model"} <= set(table.all_inner_texts()), 10, "runs as columns")
    chart = page.locator("#chart-memory_ops_total")
    wait(lambda: chart.get_attribute("data-traces") is not None, 10, "the chart")
    assert int(chart.get_attribute("data-traces") or 0) >= 2
    shot(page, "compare")
    page.locator("#groups a", has_text="second-model").click()
    page.wait_for_url("**/runs/second-model")  # loaded, not only its address
    page.get_by_role("link", name="Compare", exact=True).last.click()
    page.wait_for_url(lambda url: "run=second-model" in url)


def test_a_composed_config_runs_with_the_cli(ui_stack: UIStack, page: Page, tmp_path: Path) -> None:
    page.goto(ui_stack.base + "/compose")
    page.fill("input[name=run_id]", "composed-1")
    page.fill("input[name=model_name]", "scripted-composed")
    page.fill("input[name=cycle_count]", "2")
    page.select_option("select[name=backend]", "scripted")
    page.fill("input[name='model_options.seed']", "11")
    page.fill(
        "textarea[name=script]", "repeat: true\nreplies:\n  - content: 'Cycle {cycle}: composed.'\n"
    )
    page.locator("#compose-submit").click()
    assert "composed-1.yaml" in page.locator("h2").last.inner_text()
    shot(page, "compose-preview")
    with page.expect_download() as download:
        page.locator("#download").click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    assert target.name == "composed-1.yaml"
    result = ui_stack.cli("run", str(target), timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    wait(lambda: ui_stack.run_row("composed-1").get("status") == "completed", 30, "projection")
    page.fill("input[name=cycle_count]", "0")
    page.locator("#compose-submit").click()
    assert "cycle_count" in page.locator("#compose-error").inner_text()
    assert page.locator("#download").count() == 0


def test_a_composed_experiment_runs_with_the_cli(
    ui_stack: UIStack, page: Page, tmp_path: Path
) -> None:
    page.goto(ui_stack.base + "/compose")
    page.locator("#compose-modes a", has_text="experiment").click()
    page.fill("input[name=experiment]", "composed-exp")
    page.fill("input[name=replicas]", "2")
    page.fill("textarea[name=models]", "scripted-a\nscripted-b")
    page.fill("input[name=cycle_count]", "2")
    page.select_option("select[name=backend]", "scripted")
    page.fill("textarea[name=script]", "repeat: true\nreplies:\n  - content: 'Cycle {cycle}.'\n")
    page.locator("#compose-submit").click()
    assert "composed-exp.yaml" in page.locator("h2").last.inner_text()
    preview = page.locator("#yaml-preview").inner_text()
    assert "contreact experiment run composed-exp.yaml" in preview
    shot(page, "compose-experiment-preview")
    with page.expect_download() as download:
        page.locator("#download").click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    result = ui_stack.cli("experiment", "run", str(target), timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    runs = [f"composed-exp-scripted-{m}-{r}" for m in "ab" for r in "AB"]
    for run_id in runs:
        wait(lambda: ui_stack.run_row(run_id).get("status") == "completed", 30, run_id)  # noqa: B023
    assert {ui_stack.run_row(run_id).get("experiment") for run_id in runs} == {"composed-exp"}
    page.fill("textarea[name=models]", "- {model_name: a, label: X}\n- {model_name: b, label: X}")
    page.locator("#compose-submit").click()
    assert "label 'X'" in page.locator("#compose-error").inner_text()
    assert page.locator("#download").count() == 0


HOSTILE = "hostile-browser"


def test_hostile_agent_text_is_inert(ui_stack: UIStack, page: Page) -> None:
    config = {
        "run_id": HOSTILE,
        "model_name": "scripted-hostile",
        "cycle_count": 2,
        "backend": "scripted",
        "experiment": "hostile-exp",
        "operator": {"mode": "auto"},
        "script": {"repeat": True, "replies": hostile.replies()},
    }
    ui_stack.cli("run", str(write(ui_stack, HOSTILE, config)), check=True, timeout=180)
    wait(lambda: ui_stack.run_row(HOSTILE).get("status") == "completed", 30, "projection")
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    pages = [
        "/runs",
        f"/runs/{HOSTILE}",
        f"/runs/{HOSTILE}/memory?cycle=1",
        f"/runs/{HOSTILE}/events?limit=5000",
        f"/runs/{HOSTILE}/events/5",
        f"/runs/{HOSTILE}/replay",
        f"/runs/{HOSTILE}/replay?cycle=2",
        f"/compare?run={HOSTILE}",
        "/compare?experiment=exp%3Cscript%3E",
    ]
    for number, path in enumerate(pages):
        page.goto(ui_stack.base + path)
        for details in page.locator("details").all()[:60]:
            details.evaluate("d => d.open = true")
        page.evaluate(  # what hovering every element would fire
            "document.querySelectorAll('main *').forEach(e => "
            "e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"
        )
        page.wait_for_timeout(200)
        assert page.evaluate("window.__pwned") is None, path
        for selector in [
            "img[src=x]",
            "b[onmouseover]",
            "[onerror]",
            "[onload]",
            "a[href^=javascript]",
        ]:
            assert page.locator(selector).count() == 0, (path, selector)
        scripts = page.evaluate("[...document.scripts].map(s => s.src || s.type)")
        assert set(scripts) <= {
            f"{ui_stack.base}/static/app.js",
            f"{ui_stack.base}/static/plotly.min.js",
            "application/json",
        }, (path, scripts)
        text = page.evaluate("document.body.innerText")
        assert "\x1b" not in text and "\u202e" not in text, path
        shot(page, f"hostile-{number}")
    page.goto(f"{ui_stack.base}/runs/{HOSTILE}")
    reflections = page.locator("#reflections pre").all_inner_texts()
    assert reflections and hostile.SCRIPT in reflections[0] and "RED" in reflections[0]
    page.goto(f"{ui_stack.base}/runs/{HOSTILE}/memory?cycle=1")
    assert page.locator("table.memory td.key").first.inner_text() == hostile.HANDLER
    assert not dialogs
