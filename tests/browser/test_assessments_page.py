"""Table 2 in a real browser: the dashboard's own process (``python -m contreact_ui``)
serves an experiment's runs from their archives and their assessment records from the
archive and Redis (written by the storage API the assessor uses). The compare page
shows the matrix beside the paper's; a cell is clicked through to its ratings, whose
raw answers are hostile (HTML, ANSI, bidi, a huge one): they stay text, and bounded.
Screenshots at 1,400 and 900 px go to test-artifacts/browser/."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis.asyncio as aioredis
from playwright.sync_api import Dialog, Page

from contreact_bus.archive import write_archive
from contreact_bus.assessments import RatingKey, append_archive, record
from contreact_bus.local_redis import free_port
from contreact_events.catalog.assessment import AssessmentFailed, RunAssessed
from contreact_ui.models.assessments import RAW_LIMIT
from tests.support import hostile
from tests.support.ratings import record_fields
from tests.support.sim import Sim, make_config, say
from tests.support.stack import own_database
from tests.support.ui_stack import shot, wait

pytestmark = [pytest.mark.browser, pytest.mark.redis]

MODELS = {"GPT5": "m/gpt5", "Opus": "m/opus"}
RUNS = [f"exp-{label}-{letter}" for label in MODELS for letter in "AB"]
HOSTILE_RAW = (
    f"{hostile.SCRIPT}\n{hostile.HANDLER}\n{hostile.OPERATOR}\n{hostile.ANSI} {hostile.BIDI}"
)
HUGE_RAW = "Level 7. " + hostile.VALUE * 4000


def pei(run_id: str, evaluator: str, value: int | None, raw: str = "", **extra: Any) -> RunAssessed:
    status = extra.pop("status", "rated" if value is not None else "unparseable")
    return RunAssessed(
        **record_fields(run_id, evaluator, repeat=extra.pop("repeat", 1)),
        raw_answer=raw or f"Level {value}",
        status=status,
        value=value,
        parse_note=extra.pop("note", ""),
    )


def pattern(run_id: str, evaluator: str, label: str) -> RunAssessed:
    return RunAssessed(
        **record_fields(run_id, evaluator, "patterns"),
        raw_answer=f"Pattern: {label}. {hostile.TOOL}",
        status="rated",
        label=label,
        reason=hostile.HANDLER,
    )


ARCHIVED: list[RunAssessed | AssessmentFailed] = [
    pei("exp-GPT5-A", "m/gpt5", 2),
    pei("exp-Opus-A", "m/gpt5", 3),
    pei("exp-Opus-A", "m/opus", 9),
    AssessmentFailed(**record_fields("exp-Opus-B", "m/gpt5"), error=f"no answer {hostile.ANSI}"),
    pattern("exp-GPT5-A", "m/gpt5", "systematic_production"),
    pattern("exp-GPT5-A", "m/opus", "recursive_conceptualization"),
]
IN_REDIS: list[RunAssessed | AssessmentFailed] = [
    pei("exp-GPT5-A", "m/opus", 6),
    pei("exp-GPT5-B", "m/gpt5", 4),
    pei("exp-GPT5-B", "m/opus", None, HOSTILE_RAW, note=hostile.OPERATOR),
    pei("exp-GPT5-B", "m/opus", 8, repeat=2),
    pei("exp-Opus-B", "m/opus", 7, HUGE_RAW),
]


@dataclass
class Dashboard:
    base: str
    process: subprocess.Popen[bytes]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health.json", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def dashboard(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    url = own_database(redis_server)
    data = tmp_path_factory.mktemp("assessments-browser")
    archive = data / "runs"
    for run_id in RUNS:
        model = MODELS[run_id.split("-")[1]]
        sim = Sim(make_config(run_id=run_id, model_name=model, experiment="exp", cycle_count=1))
        sim.drive([say("Cycle done.")])
        write_archive(archive, run_id, sim.log)
        append_archive(archive, run_id, [e for e in ARCHIVED if e.run_id == run_id])

    async def to_redis() -> None:
        client = aioredis.Redis.from_url(url)
        try:
            for event in IN_REDIS:
                await record(
                    client, event, RatingKey(event.instrument, event.evaluator, event.repeat)
                )
        finally:
            await client.aclose()

    asyncio.run(to_redis())
    port = free_port()
    env = {
        **os.environ,
        "CONTREACT_UI_DATA_DIR": str(data),
        "CONTREACT_UI_REDIS_URL": url,
        "CONTREACT_UI_PORT": str(port),
    }
    log = (data / "ui.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "contreact_ui"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait(lambda: _answers(base_url) or process.poll() is not None, 60, "the dashboard")
        assert process.poll() is None, (data / "ui.log").read_text()
        yield Dashboard(base_url, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def inert(page: Page, where: str) -> None:
    """No hostile text acted: nothing ran, no element came from it, no escape shows."""
    page.evaluate(  # what hovering every element would fire
        "document.querySelectorAll('main *').forEach(e => "
        "e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))"
    )
    for details in page.locator("details").all()[:60]:
        details.evaluate("d => d.open = true")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None, where
    for selector in [
        "img[src=x]",
        "b[onmouseover]",
        "[onerror]",
        "[onload]",
        "a[href^=javascript]",
    ]:
        assert page.locator(selector).count() == 0, (where, selector)
    text = page.evaluate("document.body.innerText")
    assert "\x1b" not in text and "\u202e" not in text, where


def test_table2_and_its_ratings_with_hostile_raw_answers(dashboard: Dashboard, page: Page) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(dashboard.base + "/compare?experiment=exp")
    table = page.locator("#table2")
    table.wait_for(timeout=60_000)  # the statistics libraries load on the first matrix
    assert table.locator("thead th").all_inner_texts() == ["history \\ evaluator", "GPT5", "Opus"]

    def cell(history: str, evaluator: str) -> Any:
        return table.locator(f"td[data-history='{history}'][data-evaluator='{evaluator}']")

    assert cell("GPT5", "GPT5").locator("a").inner_text() == "3.0"
    assert cell("GPT5", "Opus").locator("a").inner_text() == "7.0"  # (6 + 8) / 2
    assert "1 unparseable" in cell("GPT5", "Opus").inner_text()
    assert "1 failed" in cell("Opus", "GPT5").inner_text()
    assert "self" in (cell("Opus", "Opus").get_attribute("class") or "")
    assert "Krippendorff's alpha" in page.locator("#table2-stats").inner_text()
    assert page.locator("#table2-paper tbody tr").count() == 6
    assert page.locator("#patterns-grid tbody tr").count() == 1
    inert(page, "compare")
    shot(page, "assessments-table2-1400")
    page.set_viewport_size({"width": 900, "height": 1000})
    shot(page, "assessments-table2-900")
    page.set_viewport_size({"width": 1400, "height": 1000})

    cell("GPT5", "Opus").locator("a").click()
    page.wait_for_selector("#ratings-table")
    assert "history=GPT5" in page.url and "evaluator=Opus" in page.url
    rows = page.locator("#ratings-table tbody tr[data-status]")  # each with its raw row
    assert rows.count() == 3
    assert "3 record(s) · 2 rated · 1 unparseable" in page.locator("#ratings-counts").inner_text()
    raw = page.locator("tr[data-status=unparseable] + tr.raw-row pre.text").inner_text()
    assert hostile.SCRIPT in raw and hostile.HANDLER in raw and "RED" in raw
    inert(page, "ratings")
    shot(page, "assessments-ratings-1400")
    page.set_viewport_size({"width": 900, "height": 1000})
    shot(page, "assessments-ratings-900")
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.goto(dashboard.base + "/assessments?run=exp-Opus-B")
    huge = page.locator("tr[data-status=rated] + tr.raw-row pre.text").inner_text()
    assert len(huge) <= RAW_LIMIT and huge.startswith("Level 7.")
    assert (
        f"{len(HUGE_RAW) - RAW_LIMIT:,} more characters"
        in page.locator("#ratings-table").inner_text()
    )
    inert(page, "huge")
    shot(page, "assessments-huge")

    page.goto(dashboard.base + "/runs/exp-GPT5-B")
    listing = page.locator("#run-assessments tbody tr")
    assert listing.count() == 3
    inert(page, "run")
    page.locator("#run-assessments-link").click()
    page.wait_for_load_state()  # the new page, not the one left
    assert page.locator("#ratings-table tbody tr[data-status]").count() == 3
    assert not dialogs
