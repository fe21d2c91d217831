"""Deterministic replay and the seed-003 export, on logs made by the pure core."""

from __future__ import annotations

import pytest

from contreact_events.history.export import export_records
from contreact_events.history.replay import replay_check
from tests.support.sim import Sim, make_config, say


@pytest.fixture
def sim() -> Sim:
    sim = Sim(make_config(cycle_count=3, operator={"mode": "auto", "auto_reply": "ok"}))
    sim.drive(
        [
            say("", ("write", {"key": "plan", "value": "explore"}), ("read", {"key": "plan"})),
            say("", ("send_message_to_operator", {"message": "hello"}), ("bad_tool", {})),
            say("reflection about plans"),
        ]
    )
    return sim


def test_replay_of_an_untouched_log_finds_no_divergence(sim: Sim) -> None:
    report = replay_check(sim.log)
    assert report.ok, report.divergence
    assert report.events == len(sim.log)
    assert report.state == sim.state


def test_replay_reports_the_first_divergence(sim: Sim) -> None:
    tampered = list(sim.log)
    index = next(i for i, e in enumerate(tampered) if e.type == "CycleEnded")
    bad_metrics = tampered[index].metrics.model_copy(update={"tool_calls": 99})
    tampered[index] = tampered[index].model_copy(update={"metrics": bad_metrics})
    report = replay_check(tampered)
    assert report.divergence is not None
    assert report.divergence.index == index
    assert "metrics" in report.divergence.describe()


def test_replay_notices_a_missing_decided_event(sim: Sim) -> None:
    index = next(i for i, e in enumerate(sim.log) if e.type == "LLMRequested")
    report = replay_check(sim.log[:index] + sim.log[index + 1 :])
    assert report.divergence is not None and report.divergence.index == index


def test_replay_notices_an_input_that_decide_would_now_ignore(sim: Sim) -> None:
    dup = sim.log[1]  # ModelChecked, answered already
    after = next(i for i, e in enumerate(sim.log) if e.type == "LLMRequested") + 1
    report = replay_check([*sim.log[:after], dup, *sim.log[after:]])
    assert report.divergence is not None
    assert "ignores" in report.divergence.reason


def test_export_has_the_seed_record_types_payloads_and_metrics(sim: Sim) -> None:
    records = list(export_records(sim.log))
    kinds = [r["event_type"] for r in records]
    assert kinds.count("CYCLE_START") == 3 and kinds.count("CYCLE_END") == 3
    assert set(kinds) == {"CYCLE_START", "LLM_INVOCATION", "TOOL_CALL", "CYCLE_END"}
    for record in records:
        assert set(record) == {"timestamp", "run_id", "cycle_number", "event_type", "payload"}
        assert record["run_id"] == "run-1"
    llm = [r for r in records if r["event_type"] == "LLM_INVOCATION"]
    first = llm[0]["payload"]
    assert first["prompt_messages"][0]["role"] == "system"
    assert first["prompt_messages"][1] == {"role": "user", "content": "Cycle 1 begins."}
    assert first["response_message"]["tool_calls"][0]["function"]["name"] == "write"
    assert "model_options" in first
    # The full prompt appears in the export: the second call sees the tool results.
    second = llm[1]["payload"]["prompt_messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert second[-1] == {"role": "tool", "content": "explore", "tool_name": "read"}
    tools = [r["payload"] for r in records if r["event_type"] == "TOOL_CALL"]
    assert tools[0] == {
        "tool_name": "write",
        "parameters": {"key": "plan", "value": "explore"},
        "output": "Stored plan.",
        "ok": True,
    }
    operator = next(t for t in tools if t["tool_name"] == "send_message_to_operator")
    assert operator["output"] == "ok" and operator["parameters"] == {"message": "hello"}
    assert any(not t["ok"] and "unknown tool" in t["output"] for t in tools)
    end = next(r for r in records if r["event_type"] == "CYCLE_END")["payload"]
    assert end["final_reflection"] == "reflection about plans"
    assert set(end["metrics"]) >= {
        "memory_ops_total",
        "messages_to_operator",
        "response_chars",
        "memory_write_chars",
    }
    assert end["metrics"]["memory_ops_total"] == 2
    assert end["metrics"]["messages_to_operator"] == 1
    assert end["metrics"]["memory_write_chars"] == len("explore")
