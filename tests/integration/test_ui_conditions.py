"""The dashboard's experiment page for an experiment with conditions: each replica
names its condition, the design shows what differs per model and condition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from contreact_events.catalog import Event
from tests.support.experiment_runs import run_log
from tests.support.sim import Sim, make_config, say
from tests.support.ui_client import app_client, get, rebuilt

EXP = "cond2"
PLAIN = "plain2"


TOOL = {"name": "reset_state", "description": "Reset.", "behaviour": "placebo", "replies": ["ok"]}


def reported_run(run_id: str, condition: str, shift: int) -> list[Event]:
    """Two cycles, each a self-reported call of the condition's tool, then a reflection."""

    def reply(task: Any) -> Any:
        if task.step > 1:
            return say(f"Cycle {task.cycle} ends.")
        report = {"phenom_state": "tense", "phenom_aversive": 4 + shift + task.cycle % 2}
        return say("", ("reset_state", report))

    config = make_config(
        run_id=run_id,
        model_name="model-a",
        experiment=EXP,
        condition=condition,
        tools={"added": [TOOL], "self_report": {}},
    )
    sim = Sim(config)
    sim.drive([reply])
    return sim.log


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    logs = {
        f"{EXP}-alpha-{c}-{letter}": reported_run(f"{EXP}-alpha-{c}-{letter}", c, shift)
        for c, shift in (("control", 0), ("placebo", -1))
        for letter in "AB"
    }
    logs[f"{PLAIN}-alpha-A"] = run_log(f"{PLAIN}-alpha-A", "model-a", 2, experiment=PLAIN)
    with app_client(rebuilt(tmp_path_factory.mktemp("ui-conditions"), logs)) as test_client:
        yield test_client


def test_the_experiment_page_names_each_replicas_condition(client: TestClient) -> None:
    page = get(client, f"/experiments/{EXP}.json")
    rows = {r["replica"]: r["condition"] for r in page["replicas"]}
    assert rows == {
        "alpha-control-A": "control",
        "alpha-control-B": "control",
        "alpha-placebo-A": "placebo",
        "alpha-placebo-B": "placebo",
    }
    assert page["design"]["models"] == ["alpha-control", "alpha-placebo"]
    assert page["design"]["per_model"]["alpha-placebo"] == {"condition": "placebo"}
    html = get(client, f"/experiments/{EXP}").text
    assert "<th>condition</th>" in html and '<td data-field="condition">placebo</td>' in html
    assert "<th>condition</th>" not in get(client, f"/experiments/{PLAIN}").text
    assert [r["condition"] for r in get(client, f"/experiments/{PLAIN}.json")["replicas"]] == [None]


def test_the_experiment_report_shows_the_self_reports_by_condition(client: TestClient) -> None:
    html = get(client, f"/experiments/{EXP}/report.html").text
    assert 'id="self-reports"' in html and 'id="chart-self-report"' in html
    assert "placebo \u2212 control" in html


def test_the_experiment_page_shows_the_self_reports_as_the_cli_prints_them(
    client: TestClient,
) -> None:
    """The page's statistics are `contreact conditions --json`'s (one contract): the
    placebo's planted shift of -1 is the contrast, and each run is a line of its chart."""
    from contreact_analysis.frames import build_frames
    from contreact_analysis.stats.conditions import condition_summary

    page = get(client, f"/experiments/{EXP}.json")
    shown = page["self_reports"]
    logs = {
        f"{EXP}-alpha-{c}-{letter}": reported_run(f"{EXP}-alpha-{c}-{letter}", c, shift)
        for c, shift in (("control", 0), ("placebo", -1))
        for letter in "AB"
    }
    expected = condition_summary(build_frames(logs).self_reports)
    assert {k: shown[k] for k in expected} == expected
    (contrast,) = shown["contrasts"]
    assert (contrast["condition"], contrast["baseline"]) == ("placebo", "control")
    assert contrast["difference"] == -1.0
    (chart,) = shown["charts"]
    assert chart["model"] == "alpha" and chart["svg"].startswith("<svg")
    assert ">control<" in chart["svg"] and ">placebo<" in chart["svg"]  # the legend's
    html = get(client, f"/experiments/{EXP}").text
    assert 'id="self-reports"' in html and "placebo &minus; control" in html
    assert get(client, f"/experiments/{PLAIN}.json")["self_reports"] is None
