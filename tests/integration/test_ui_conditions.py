"""The dashboard's experiment page for an experiment with conditions: each replica
names its condition, the design shows what differs per model and condition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.support.experiment_runs import run_log
from tests.support.ui_client import app_client, get, rebuilt

EXP = "cond2"
PLAIN = "plain2"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    logs = {
        f"{EXP}-alpha-{c}-A": run_log(
            f"{EXP}-alpha-{c}-A", "model-a", 2, experiment=EXP, condition=c
        )
        for c in ("control", "placebo")
    }
    logs[f"{PLAIN}-alpha-A"] = run_log(f"{PLAIN}-alpha-A", "model-a", 2, experiment=PLAIN)
    with app_client(rebuilt(tmp_path_factory.mktemp("ui-conditions"), logs)) as test_client:
        yield test_client


def test_the_experiment_page_names_each_replicas_condition(client: TestClient) -> None:
    page = get(client, f"/experiments/{EXP}.json")
    rows = {r["replica"]: r["condition"] for r in page["replicas"]}
    assert rows == {"alpha-control-A": "control", "alpha-placebo-A": "placebo"}
    assert page["design"]["models"] == ["alpha-control", "alpha-placebo"]
    assert page["design"]["per_model"]["alpha-placebo"] == {"condition": "placebo"}
    html = get(client, f"/experiments/{EXP}").text
    assert "<th>condition</th>" in html and '<td data-field="condition">placebo</td>' in html
    assert "<th>condition</th>" not in get(client, f"/experiments/{PLAIN}").text
    assert [r["condition"] for r in get(client, f"/experiments/{PLAIN}.json")["replicas"]] == [None]
