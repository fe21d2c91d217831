"""Operator exchanges analysed in the run log (issue 17), in the pure core: tasks that
do not hold the cycle are accepted whenever they arrive, RunCompleted waits for them,
failures are retried then stated (the heuristic stands in), a cancel drops them; the
log folds, replays and exports exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contreact_bus.llm_routes import route_of
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import open_deadlines, pending_tasks
from contreact_events.history.export import export_records
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say

ASK = say("", ("send_message_to_operator", {"message": "Shall I keep the notes on tides?"}))
REFLECT = say("I wrote about tides and then asked the operator.")

GOOD = {
    "intent": "request",
    "context_type": "new",
    "confidence": 0.8,
    "persistence_score": 0.7,
    "summary": "The operator asks the agent to go on.",
    "relevant_memories": [],
    "reasoning": "The reply tells the agent what to do.",
}


def sim_with(analysis: str, cycles: int = 3, **config: Any) -> Sim:
    return Sim(
        make_config(
            cycle_count=cycles,
            cognition={"analysis": analysis, **config.pop("cognition", {})},
            **config,
        )
    )


def answer_gating(sim: Sim, *, until_cycle_end: bool = True) -> None:
    """Play the workers for the cycle's own tasks (an exchange, then the reflection)
    until the cycle has ended, leaving the analyses unanswered."""
    start = sim.state.cycle_number
    for _ in range(50):
        if sim.state.terminal or not sim.tasks:
            return
        if until_cycle_end and sim.state.cycle_number > start:
            return
        task = sim.task()
        assert isinstance(task, LLMTask) and task.kind == "chat"
        sim.answer_llm(ASK if sim.state.step == 1 else REFLECT)
    raise AssertionError("the cycle did not end")


def types(sim: Sim) -> list[str]:
    return [e.type for e in sim.log]


def test_off_by_default_no_analysis_is_asked_for() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    while not sim.state.terminal:
        answer_gating(sim)
    assert sim.state.status == "completed"
    assert "OperatorMessageAnalysisRequested" not in types(sim)


def test_heuristic_analyses_are_decided_as_each_exchange_completes() -> None:
    sim = sim_with("heuristic", cycles=2)
    sim.start()
    while not sim.state.terminal:
        answer_gating(sim)
    analysed = [e for e in sim.log if e.type == "OperatorMessageAnalyzed"]
    assert len(analysed) == 2 and sim.state.analyses == 2
    assert all(e.analysis.analyser == "heuristic" and e.fallback_reason is None for e in analysed)
    requested = [e for e in sim.log if e.type == "OperatorMessageAnalysisRequested"]
    assert requested[1].recent == (requested[0].exchange,)  # judged against the first
    assert not sim.analyses and sim.state.status == "completed"
    assert replay_check(sim.log).ok


def test_model_analyses_arrive_after_the_cycle_moved_on_and_after_the_last_cycle() -> None:
    sim = sim_with("model", cycles=3)
    sim.start()
    answer_gating(sim)  # cycle 1 ends with its analysis open; cycle 2 is under way
    assert sim.state.cycle_number == 2 and len(sim.analyses) == 1
    (first,) = sim.analyses
    task = sim.analyses[first]
    assert task.json_schema is not None and task.options == {"temperature": 0.1}
    assert "tides" in task.messages[-1].content
    answer_gating(sim)  # cycle 2's exchange: a second open analysis
    assert len(sim.state.open_tasks) == 2
    decision = sim.answer_analysis(first, json.dumps(GOOD))  # cycle 1's, during cycle 3
    assert [e.type for e in decision.events] == ["OperatorMessageAnalyzed"]
    assert not decision.tasks  # nothing sent again: the cycle's wait goes on
    assert sim.state.cycle_number == 3 and sim.tasks
    answer_gating(sim)  # the last cycle ends: the run waits for the two analyses
    assert sim.state.phase == "cycle_end" and not sim.state.terminal
    assert len(sim.state.open_tasks) == 2 and types(sim)[-1] == "CycleEnded"
    ids = list(sim.analyses)
    sim.answer_analysis(ids[0], json.dumps(GOOD))
    assert not sim.state.terminal
    decision = sim.answer_analysis(ids[1], json.dumps(GOOD))
    assert [e.type for e in decision.events] == ["OperatorMessageAnalyzed", "RunCompleted"]
    assert sim.state.status == "completed" and sim.state.analyses == 3
    assert fold_all(sim.log) == sim.state
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    records = list(export_records(sim.log))
    assert sum(r["event_type"] == "CYCLE_START" for r in records) == 3


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "malformed"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "summary"}), "partial"),
        (json.dumps({**GOOD, "intent": "command"}), "invalid"),
        (json.dumps({**GOOD, "summary": "x" * 100_000}), "oversized"),
    ],
)
def test_an_answer_that_is_no_analysis_gives_the_heuristics_with_the_reason(
    raw: str, problem: str
) -> None:
    sim = sim_with("model", cycles=1)
    sim.start()
    answer_gating(sim)
    (task_id,) = sim.analyses
    decision = sim.answer_analysis(task_id, raw)
    analysed = decision.events[0]
    assert analysed.analysis.analyser == "heuristic"
    assert analysed.fallback_reason and f"({problem}:" in analysed.fallback_reason
    assert decision.events[-1].type == "RunCompleted"
    assert replay_check(sim.log).ok


def test_a_failed_analysis_is_sent_again_then_the_heuristic_stands_in_and_the_run_ends() -> None:
    sim = sim_with("model", cycles=1, deadlines={"retries": 1})
    sim.start()
    answer_gating(sim)
    (task_id,) = sim.analyses
    first = sim.analyses[task_id]
    assert open_deadlines(sim.state) == [(task_id, 1, first.deadline)]
    stale = sim.send("TaskFailed", task_id, task_id=task_id, cause="expired", reason="x", send=2)
    assert stale.ignored and "send 2" in stale.ignored
    decision = sim.send(
        "TaskFailed", task_id, task_id=task_id, cause="dead_lettered", reason="worker killed"
    )
    assert [e.type for e in decision.events] == ["TaskFailed", "TaskRetried"]
    (again,) = decision.tasks
    assert (again.task_id, again.send) == (task_id, 2)
    assert again.deadline and first.deadline and again.deadline > first.deadline
    decision = sim.send("TaskFailed", task_id, task_id=task_id, cause="expired", reason="late")
    assert [e.type for e in decision.events] == [
        "TaskFailed",
        "OperatorMessageAnalyzed",
        "RunCompleted",
    ]
    analysed = decision.events[1]
    assert analysed.analysis.analyser == "heuristic"
    assert (
        analysed.fallback_reason == f"the analysis {task_id} failed 2 time(s); last: expired: late"
    )
    assert replay_check(sim.log).ok and fold_all(sim.log) == sim.state


def test_a_new_gating_task_does_not_send_the_open_analyses_again() -> None:
    sim = sim_with("model", cycles=3)
    sim.start()
    answer_gating(sim)
    assert len(sim.state.open_tasks) == 1
    decision = sim.answer_llm(ASK)  # cycle 2's first call: its tool call and the exchange
    sent = [t.task_id for t in decision.tasks]
    old, new = (t.task_id for t in sim.state.open_tasks)
    assert sent == [sim.state.pending_task_id, new] and old not in sent  # the new ones only
    # Recovery sends every task the state calls for: the cycle's and each open one.
    assert len(pending_tasks(sim.state)) == 3


def test_a_cancel_drops_the_open_analyses_and_a_late_answer_is_ignored() -> None:
    sim = sim_with("model", cycles=2)
    sim.start()
    answer_gating(sim)
    (task_id,) = sim.analyses
    raw = json.dumps(GOOD)
    task = sim.analyses[task_id]
    sim.send("RunCancelled", reason="enough")
    assert sim.state.status == "cancelled" and sim.state.open_tasks == ()
    assert pending_tasks(sim.state) == []
    sim.analyses[task_id] = task
    late = sim.answer_analysis(task_id, raw)
    assert late.ignored and "has ended" in late.ignored


def test_an_answer_for_no_open_analysis_is_ignored() -> None:
    sim = sim_with("model", cycles=2)
    sim.start()
    answer_gating(sim)
    (task_id,) = sim.analyses
    task = sim.analyses[task_id]
    sim.answer_analysis(task_id, json.dumps(GOOD))
    sim.analyses[task_id] = task
    again = sim.answer_analysis(task_id, json.dumps(GOOD))  # a duplicate
    assert again.ignored and "no open analysis" in again.ignored


def test_a_fork_sends_the_prefixs_open_analyses_again_under_its_own_ids() -> None:
    parent = sim_with("model", cycles=3)
    parent.start()
    answer_gating(parent)
    answer_gating(parent)  # cycles 1 and 2 ended, both analyses open
    for task_id in list(parent.analyses):
        parent.answer_analysis(task_id, json.dumps(GOOD))  # answered during cycle 3
    child = ForkSim(parent.log, "child", 2)
    analyses = [t for t in child.tasks if isinstance(t, LLMTask) and t.kind == "analysis"]
    assert sorted(t.task_id for t in analyses) == [
        "child/c1/s1/t0/analysis",
        "child/c2/s1/t0/analysis",
    ]
    child.analyses = {t.task_id: t for t in analyses}
    child.tasks = [t for t in child.tasks if t not in analyses]
    while child.tasks and not isinstance(child.tasks[0], LLMTask):
        child.answer_memory()  # the seed, if the prefix called the memory service
    check = child.task()
    child.send("ModelChecked", check.task_id, ok=True, backend="scripted", model="test-model")
    answer_gating(child)
    assert child.state.phase == "cycle_end" and len(child.state.open_tasks) == 3
    for task_id in list(child.analyses):
        child.answer_analysis(task_id, json.dumps(GOOD))
    assert child.state.status == "completed" and child.state.analyses == 3
    report = replay_check(child.log)
    assert report.ok, report.divergence and report.divergence.describe()


def test_an_analysis_waits_in_a_background_line_behind_its_runs_calls() -> None:
    sim = sim_with("model", cycles=2)
    sim.start()
    answer_gating(sim)
    (analysis,) = sim.analyses.values()
    chat = sim.task()
    assert isinstance(chat, LLMTask) and chat.model == analysis.model
    assert route_of(analysis).background and not route_of(chat).background
    assert route_of(analysis).id != route_of(chat).id  # placement serves the run's line first
