"""Issue 17 on the dashboard: each operator exchange shows its analysis beside it (intent,
context type, confidence, persistence score, summary, relevant memories, reasoning, the
analyser, the fallback reason; "awaiting" until it is recorded), on the run page, the
replay page (as it stood at the position shown) and their JSON; memory entries the
platform's memory policy wrote are marked persistent wherever memory is shown, by
provenance (the event that wrote them), not by the key's prefix. Served by the whole app
from projections rebuilt from archives: a run of hostile text made by the pure core
(``tests/support/exchange_runs.py``), a run with the memory policy, and the recorded
cognition log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from contreact_events.wire.codec import event_from_json
from tests.support import hostile
from tests.support.exchange_runs import (
    KEPT_BY_POLICY,
    NOTES_KEY,
    PERSISTENT_KEY,
    REASONING,
    SUMMARY,
    analysed_log,
    model_answer,
    policy_log,
)
from tests.support.ui_client import app_client, get, rebuilt

RUN = "exchanges"
POLICY_RUN = "policy-run"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "runlog-v4-cognition.jsonl"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    recorded = [event_from_json(line) for line in FIXTURE.read_bytes().splitlines() if line]
    return rebuilt(
        tmp_path_factory.mktemp("ui-exchanges"),
        {RUN: analysed_log(RUN), "run-1": recorded, POLICY_RUN: policy_log(POLICY_RUN)},
    )


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient]:
    with app_client(data_dir) as test_client:
        yield test_client


def assert_inert(html: str) -> None:
    for markup in (*hostile.MARKUP, "<b onmouseover=\"window.__pwned='summary'"):
        assert markup not in html, markup
    assert "\x1b" not in html and "\u202e" not in html


def exchange_seqs(client: TestClient, run_id: str) -> list[dict[str, Any]]:
    return list(get(client, f"/runs/{run_id}.json")["operator"])


def test_the_run_page_shows_each_exchange_with_its_analysis(client: TestClient) -> None:
    first, second, third = exchange_seqs(client, RUN)
    assert first["analysis_status"] == "analysed" and first["analysis_requested"] == "model"
    answered = json.loads(model_answer())  # as the model answered it, and who did
    assert first["analysis"] == {
        **answered,
        "analyser": "model",
        "fallback_reason": None,
        "platform_memories": [],  # no key was the policy's (this run has none)
    }
    assert answered["summary"] == SUMMARY and answered["reasoning"] == REASONING
    assert answered["confidence"] == 0.83 and answered["persistence_score"] == 0.91
    assert second["analysis_status"] == "analysed"
    assert second["analysis"]["analyser"] == "heuristic"
    assert second["analysis"]["fallback_reason"].startswith("the model's answer was refused")
    assert second["analysis"]["intent"] in ("question", "request", "statement", "conversation")
    assert third["analysis_status"] == "awaiting" and third["analysis"] is None
    assert third["analysis_requested"] == "model" and third["reply"] is not None


def test_the_run_page_html_shows_the_analyses_as_text(client: TestClient) -> None:
    html = get(client, f"/runs/{RUN}").text
    assert html.count('class="analysis-cell"') == 3
    assert "awaiting its analysis (model)" in html
    assert "The heuristic stood in for the model: the model&#39;s answer was refused" in html
    assert "The operator wants notes &lt;b onmouseover=" in html  # the summary, as text
    assert "&lt;script&gt;window.__pwned=&#39;reasoning&#39;&lt;/script&gt;" in html
    for label in ("intent", "context", "confidence", "persistence", "analyser"):
        assert f"<dt>{label}</dt>" in html
    assert '<dd class="confidence">0.83</dd>' in html
    assert '<dd class="persistence">0.91</dd>' in html
    # the agent wrote PERSISTENT_KEY itself (no policy in this run): not marked
    cell = html[html.index("analysis-analysed") :]
    assert f"<code>{PERSISTENT_KEY}</code></a>" in cell and "badge persistent" not in cell
    assert_inert(html)
    # a relevant memory the policy kept is marked (the policy run's second exchange)
    first, second = exchange_seqs(client, POLICY_RUN)
    assert first["analysis"]["platform_memories"] == []
    assert second["analysis"]["platform_memories"] == [KEPT_BY_POLICY]
    html = get(client, f"/runs/{POLICY_RUN}").text
    assert f'<code>{KEPT_BY_POLICY}</code></a> <span class="badge persistent"' in html
    assert f'<code>{NOTES_KEY}</code></a> <span class="badge' not in html


def test_the_recorded_log_shows_the_heuristic_standing_in_when_no_answer_came(
    client: TestClient,
) -> None:
    first, second, third = exchange_seqs(client, "run-1")
    assert first["analysis"]["analyser"] == "model" and first["analysis"]["fallback_reason"] is None
    assert second["analysis"]["analyser"] == "heuristic"
    assert third["analysis"]["fallback_reason"].endswith("last: expired: no answer")
    assert {e["analysis_status"] for e in (first, second, third)} == {"analysed"}


def test_the_replay_shows_each_exchange_as_it_stood(client: TestClient) -> None:
    events = get(client, f"/runs/{RUN}/events.json?limit=5000")["events"]
    first_task = exchange_seqs(client, RUN)[0]["task_id"]
    seq_of = {
        (e["type"], e.get("task_key")): e["seq"] for e in events if e["type"].startswith("Operator")
    }
    sent = seq_of[("OperatorMessageSent", first_task)]
    replied = seq_of[("OperatorReplied", first_task)]
    requested = seq_of[("OperatorMessageAnalysisRequested", f"{first_task}/analysis")]
    analysed = seq_of[("OperatorMessageAnalyzed", f"{first_task}/analysis")]
    assert sent < replied < requested < analysed

    def first_at(seq: int) -> dict[str, Any]:
        page = get(client, f"/runs/{RUN}/replay.json?seq={seq}")
        assert page["operator"][0]["task_id"] == first_task
        return dict(page["operator"][0])

    assert get(client, f"/runs/{RUN}/replay.json?seq={sent - 1}")["operator"] == []
    at_sent = first_at(sent)
    assert at_sent["reply"] is None and at_sent["analysis_status"] == "not requested"
    at_request = first_at(requested)
    assert at_request["reply"] is not None and at_request["analysis_status"] == "awaiting"
    assert at_request["analysis"] is None
    assert first_at(analysed)["analysis"]["summary"] == SUMMARY
    last = get(client, f"/runs/{RUN}/replay.json")
    assert [e["analysis_status"] for e in last["operator"]] == ["analysed", "analysed", "awaiting"]

    html = get(client, f"/runs/{RUN}/replay?seq={requested}").text
    assert "Operator exchanges so far" in html and "awaiting its analysis (model)" in html
    assert_inert(html)
    html = get(client, f"/runs/{RUN}/replay").text
    assert html.count('class="analysis-cell"') == 3 and "The operator wants notes" in html
    assert_inert(html)


def test_memory_the_policy_wrote_is_marked_wherever_memory_is_shown(
    client: TestClient,
) -> None:
    entries = {e["key"]: e for e in get(client, f"/runs/{POLICY_RUN}/memory.json")["entries"]}
    assert entries[KEPT_BY_POLICY]["persistent"] is True
    assert entries[NOTES_KEY]["persistent"] is False
    replay = {e["key"]: e for e in get(client, f"/runs/{POLICY_RUN}/replay.json")["memory"]}
    assert replay[KEPT_BY_POLICY]["persistent"] and not replay[NOTES_KEY]["persistent"]
    for path in (f"/runs/{POLICY_RUN}/memory", f"/runs/{POLICY_RUN}/replay"):
        html = get(client, path).text
        row = html[html.index(f'data-key="{KEPT_BY_POLICY}"') :]
        assert row.index('class="badge persistent"') < row.index("</tr>"), path
        notes = html[html.index(f'data-key="{NOTES_KEY}"') :]
        assert "persistent" not in notes[: notes.index("</tr>")], path
        assert_inert(html)


def test_an_agents_own_key_under_the_prefix_is_not_marked(client: TestClient) -> None:
    """Without the policy nothing reserves ``persistent/``: the agent's own
    ``write("persistent/op-c1", ...)`` is the agent's, on every page that shows memory."""
    entries = {e["key"]: e for e in get(client, f"/runs/{RUN}/memory.json")["entries"]}
    assert not any(e["persistent"] for e in entries.values())
    assert PERSISTENT_KEY in entries and hostile.HANDLER in entries
    replay = {e["key"]: e for e in get(client, f"/runs/{RUN}/replay.json")["memory"]}
    assert replay[PERSISTENT_KEY]["persistent"] is False
    for path in (f"/runs/{RUN}/memory", f"/runs/{RUN}/replay"):
        html = get(client, path).text
        assert "badge persistent" not in html and f'data-key="{PERSISTENT_KEY}"' in html, path
        assert_inert(html)
    hits = get(client, "/search.json?q=javascript&kind=memory")["hits"]
    assert [(h["label"], h["persistent"]) for h in hits] == [(PERSISTENT_KEY, False)]
    notes_hits = get(client, "/search.json?q=tides&kind=memory")["hits"]
    assert notes_hits and not any(h["persistent"] for h in notes_hits)
    assert "badge persistent" not in get(client, "/search?q=javascript&kind=memory").text


def test_table1_on_the_compare_page_counts_the_agents_own_keys(client: TestClient) -> None:
    """The policy run ends with its note and the kept exchange in memory: Table 1's
    "Final unique memory keys" counts the note alone (the paper's agents had no policy),
    as the dataframes' Table 1 does; the run list still shows both keys in memory."""
    page = get(client, f"/compare.json?run={POLICY_RUN}&run={RUN}")
    keys = next(row for row in page["table1"] if row["metric"] == "memory_keys")
    labels = [g["label"] for g in page["groups"]]
    assert keys["ours"][labels.index(POLICY_RUN)] == 1
    assert keys["ours"][labels.index(RUN)] == 3  # notes, its persistent/ key, the handler
    runs = {r["run_id"]: r for r in get(client, "/runs.json")["runs"]}
    assert runs[POLICY_RUN]["memory_keys"] == 2
