"""An exchange's analysis by a model is spend (issue 33): its call's usage and cost on
``OperatorMessageAnalyzed`` (version 2), folded into the run's spend and counted
against its budget; the task carries the price of ``cognition.model``; version 1
answers read as calls of unknown cost, never zero; a budget stop reached by an
analysis replays exactly; the dataframes show it per call, cycle and run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog import upcast
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.config.spend import ModelPrice, missing_price
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import analysis_tasks
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say
from tests.unit.test_saved_logs import FIXTURES, load

ASK = say("", ("send_message_to_operator", {"message": "Shall I keep the notes on tides?"}))
REFLECT = say("I wrote about tides and then asked the operator.")
GOOD = json.dumps(
    {
        "intent": "request",
        "context_type": "new",
        "confidence": 0.8,
        "persistence_score": 0.7,
        "summary": "The operator asks the agent to go on.",
        "relevant_memories": [],
        "reasoning": "The reply tells the agent what to do.",
    }
)
ANALYST = "analyst-model"
AGENT_CALL = {
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "cost": 0.01,
    "cost_source": "provider",
}
ANALYSES: list[dict[str, Any]] = [
    # the worker priced it: 1000 x 10 + 100 x 20 per million
    {"prompt_tokens": 1000, "completion_tokens": 100, "cost": 0.012, "cost_source": "price_table"},
    {"prompt_tokens": 900, "completion_tokens": 80},  # no price, no provider figure: unknown
    {"prompt_tokens": 800, "completion_tokens": 90, "cost": 0.05, "cost_source": "provider"},
]


def spend_sim() -> Sim:
    """Four cycles, each asking the operator; the analyses by ``ANALYST`` (priced in the
    table) arrive during the next cycle; a cost budget of 0.1 USD."""
    return Sim(
        make_config(
            run_id="analysis-spend",  # (every saved log has its own run id)
            cycle_count=4,
            cognition={"analysis": "model", "model": ANALYST},
            budget={"cost": 0.1},
            prices={ANALYST: {"input": 10, "output": 20}},
        )
    )


def drive(sim: Sim) -> None:
    """Each cycle: the agent asks, then reflects (0.01 USD a call); the previous
    cycle's analysis is answered right after the cycle's first call is asked for."""
    sim.start()
    usages = iter(ANALYSES)
    while not sim.state.terminal:
        if sim.analyses and sim.state.phase == "awaiting_llm" and sim.state.step == 1:
            (task_id,) = sim.analyses
            sim.answer_analysis(task_id, GOOD, **next(usages))
        sim.answer_llm(ASK if sim.state.step == 1 else REFLECT, **AGENT_CALL)


def test_analysis_spend_counts_and_its_budget_stop_replays_exactly() -> None:
    sim = spend_sim()
    drive(sim)
    state = sim.state
    assert state.status == "stopped"
    analysed = [e for e in sim.log if e.type == "OperatorMessageAnalyzed"]
    assert [e.usage.cost if e.usage else "none" for e in analysed] == [0.012, None, 0.05]
    # two agent calls a cycle for cycles 1-3, then cycle 4's first (its exchange's
    # analysis is asked for, then the next call is not made)
    assert state.llm_calls == 7
    assert state.spent_cost == pytest.approx(7 * 0.01 + 0.012 + 0.05)
    assert state.uncosted_calls == 1
    assert state.spent_tokens == 7 * 110 + 1100 + 980 + 890
    stop = sim.log[-1]
    assert stop.type == "RunStopped" and "reached the budget of 0.1 USD" in stop.detail
    # the agent's own calls (0.07) would not have reached it: the analyses did
    assert sum(e.usage.cost or 0 for e in sim.log if isinstance(e, LLMResponded)) < 0.1
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.state == state == fold_all(sim.log)


def test_the_analysis_task_carries_the_price_of_the_analysis_model() -> None:
    sim = spend_sim()
    sim.start()
    sim.answer_llm(ASK)
    (task,) = analysis_tasks(sim.state)
    assert isinstance(task, LLMTask) and task.model == ANALYST
    assert task.price == ModelPrice(input=10, output=20)
    unpriced = Sim(
        make_config(cognition={"analysis": "model"}, prices={ANALYST: {"input": 1, "output": 1}})
    )
    unpriced.start()
    unpriced.answer_llm(ASK)
    (task,) = analysis_tasks(unpriced.state)
    assert task.model == "test-model" and task.price is None  # the table lacks it


def test_a_price_table_without_the_analysis_model_is_named() -> None:
    config = make_config(
        cognition={"analysis": "model", "model": ANALYST},
        prices={"test-model": {"input": 1, "output": 1}},
    )
    assert config.priced_models == ("test-model", ANALYST)
    lines = [missing_price(config.prices, m) for m in config.priced_models]
    assert lines[0] is None and f"no price for model '{ANALYST}'" in (lines[1] or "")
    assert make_config(cognition={"model": ANALYST}).priced_models == ("test-model",)


def test_an_analysis_without_usage_is_no_call_and_a_heuristic_one_costs_nothing() -> None:
    sim = Sim(make_config(cognition={"analysis": "heuristic"}, cycle_count=1))
    sim.start()
    while not sim.state.terminal:
        sim.answer_llm(ASK if sim.state.step == 1 else REFLECT, **AGENT_CALL)
    (analysed,) = [e for e in sim.log if e.type == "OperatorMessageAnalyzed"]
    assert analysed.usage is None
    assert sim.state.spent_cost == pytest.approx(0.02)
    assert sim.state.uncosted_calls == 0


def test_version_1_analyses_read_as_worker_calls_of_unknown_cost_never_zero() -> None:
    events = load(FIXTURES / "runlog-v4-cognition.jsonl")
    analysed = [e for e in events if e.type == "OperatorMessageAnalyzed"]
    worker = [e for e in analysed if e.causation_id == e.task_id]
    core = [e for e in analysed if e.causation_id != e.task_id]
    assert worker and core  # cycle 1 and 2 by the worker; cycle 3 the core's heuristic
    assert all(e.usage is not None and e.usage.cost is None for e in worker)
    assert all(e.usage is None for e in core)
    state = fold_all(events)
    agent_uncosted = sum(e.usage.cost is None for e in events if e.type == "LLMResponded")
    assert state.uncosted_calls == agent_uncosted + len(worker)
    raw = {"type": "OperatorMessageAnalyzed", "schema_version": 1, "task_id": "t/analysis"}
    assert upcast({**raw, "causation_id": "t/analysis"})["usage"] == {}
    assert upcast({**raw, "causation_id": "some-event"})["usage"] is None


def test_the_dataframes_show_the_analyses_spend() -> None:
    from contreact_analysis.frames.tables import build_frames

    sim = spend_sim()
    drive(sim)
    frames = build_frames({"analysis-spend": sim.log})
    (run,) = frames.runs.to_dict("records")
    assert run["cost"] == pytest.approx(sim.state.spent_cost)
    assert run["uncosted_calls"] == 1
    rows = frames.events[frames.events["type"] == "OperatorMessageAnalyzed"]["cost"]
    assert rows.isna().tolist() == [False, True, False]
    assert rows.dropna().tolist() == [0.012, 0.05]
    assert frames.cycles["cost"].sum() == pytest.approx(sim.state.spent_cost)
    assert frames.cycles["uncosted_calls"].sum() == 1


def write_fixture(path: Path = FIXTURES / "runlog-v7-analysis-spend.jsonl") -> None:
    """The saved log of ``spend_sim`` (``python -m tests.unit.test_analysis_spend``)."""
    sim = spend_sim()
    drive(sim)
    path.write_bytes(b"\n".join(event_to_json(event) for event in sim.log) + b"\n")


def test_the_saved_log_is_this_scenario() -> None:
    sim = spend_sim()
    drive(sim)
    saved = load(FIXTURES / "runlog-v7-analysis-spend.jsonl")
    assert saved == sim.log


if __name__ == "__main__":
    write_fixture()
