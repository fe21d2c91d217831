"""Seed 002's persistent memory as a run option (``cognition.memory_policy``), in the
pure core: an exchange scoring above the threshold is stored under the reserved prefix
by a logged memory task before its reply reaches the model; the policy holds the cycle
on the exchange's analysis (a model's too), so what the agent reads never depends on
timing; the agent's own write and delete on the prefix go to the store with the rule;
the log folds, replays and exports exactly, and memory_calls (memory-rebuild, forks)
sees the stores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contreact_bus.llm_routes import route_of
from contreact_events.catalog.cognition import PersistentMemoryRequested
from contreact_events.catalog.exchange import Exchange
from contreact_events.cognition.heuristic import analyse_heuristically
from contreact_events.cognition.policy import PERSISTENT_PREFIX, kept_key
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import ConfigError
from contreact_events.history.export import export_records
from contreact_events.history.memory_calls import memory_calls
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import LLMTask, MemoryTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say

MESSAGE = "Shall I keep the notes on tides?"
ASK = say("", ("send_message_to_operator", {"message": MESSAGE}))
REFLECT = say("I asked the operator about the tides.")
KEEP = "Please remember this from now on: my name is Ada, and the harbour code is 4471."
DROP = "Thanks!"

GOOD = {
    "intent": "statement",
    "context_type": "new",
    "confidence": 0.8,
    "persistence_score": 0.9,
    "summary": "The operator gives the harbour code.",
    "relevant_memories": [],
    "reasoning": "A fact to keep.",
}


def policy_sim(analysis: str = "heuristic", cycles: int = 2, **cognition: Any) -> Sim:
    return Sim(
        make_config(
            cycle_count=cycles,
            operator={"mode": "human"},
            cognition={"analysis": analysis, "memory_policy": True, **cognition},
        )
    )


def to_reply(sim: Sim) -> str:
    """Answer the cycle's first call with the operator tool; the run then waits for a
    person. Returns the operator call's task id."""
    sim.answer_llm(ASK)
    assert sim.state.status == "waiting_operator" and not sim.tasks
    head = sim.state.tool_queue[0]
    return head.task_id


def reply(sim: Sim, task_id: str, text: str) -> None:
    decision = sim.send("OperatorReplied", task_id=task_id, text=text)
    assert decision.accepted, decision.ignored


def types(sim: Sim) -> list[str]:
    return [e.type for e in sim.log]


def finish(sim: Sim) -> None:
    for _ in range(100):
        if sim.state.terminal:
            return
        task = sim.task()
        if isinstance(task, MemoryTask):
            sim.answer_memory()
        else:
            sim.answer_llm(REFLECT if sim.state.step >= 1 else ASK)
            if sim.state.status == "waiting_operator":
                reply(sim, sim.state.tool_queue[0].task_id, DROP)
    raise AssertionError("the run did not end")


def test_the_policy_needs_an_analyser_and_a_threshold_in_range() -> None:
    with pytest.raises(ConfigError, match=r"memory_policy needs .* cognition.analysis"):
        make_config(cognition={"memory_policy": True})
    with pytest.raises(ConfigError, match="persistence_threshold"):
        make_config(cognition={"analysis": "heuristic", "persistence_threshold": 1.5})
    config = make_config(cognition={"analysis": "heuristic"})
    assert config.cognition.memory_policy is False  # off by default: the paper has none
    assert config.cognition.persistence_threshold == 0.6


def test_a_high_scoring_exchange_is_stored_before_the_reply_reaches_the_model() -> None:
    sim = policy_sim()
    sim.start()
    call = to_reply(sim)
    reply(sim, call, KEEP)
    # The store is the task the cycle waits on; the reply has not gone back yet.
    task = sim.task()
    assert isinstance(task, MemoryTask) and task.tool == "persist"
    assert task.reserved_prefix == PERSISTENT_PREFIX
    assert types(sim)[-3:] == [
        "OperatorMessageAnalysisRequested",
        "OperatorMessageAnalyzed",
        "PersistentMemoryRequested",
    ]
    kept = sim.log[-1]
    assert isinstance(kept, PersistentMemoryRequested)
    assert kept.key == kept_key(1, 1, 0) == "persistent/exchange-c001-s01-t00"
    assert kept.persistence_score > kept.threshold == 0.6
    unit = json.loads(kept.value)
    assert unit["agent_message"] == MESSAGE and unit["operator_reply"] == KEEP
    assert unit["persistence_score"] == kept.persistence_score and unit["cycle"] == 1
    assert unit["intent"] == sim.log[-2].analysis.intent
    assert task.arguments == {"key": kept.key, "value": kept.value}
    decision = sim.answer_memory()
    assert [e.type for e in decision.events] == [
        "PersistentMemoryStored",
        "ToolCallCompleted",
        "LLMRequested",
    ]
    assert decision.events[1].output == KEEP
    (chat,) = decision.tasks
    assert isinstance(chat, LLMTask) and chat.kind == "chat"
    assert sim.memory[kept.key] == kept.value
    finish(sim)
    assert sim.state.status == "completed"
    assert fold_all(sim.log) == sim.state
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    records = list(export_records(sim.log))
    # The seed-003 export holds the agent's calls only; the store is in the event log.
    tools = [r["payload"]["tool_name"] for r in records if r["event_type"] == "TOOL_CALL"]
    assert tools == ["send_message_to_operator"]
    calls = memory_calls(sim.log)
    assert [(c.task.tool, c.task.arguments["key"]) for c in calls] == [("persist", kept.key)]


def test_a_low_scoring_exchange_is_not_stored() -> None:
    sim = policy_sim()
    sim.start()
    reply(sim, to_reply(sim), DROP)
    assert "PersistentMemoryRequested" not in types(sim)
    assert types(sim)[-3:] == ["OperatorMessageAnalyzed", "ToolCallCompleted", "LLMRequested"]
    assert isinstance(sim.task(), LLMTask)


def test_the_threshold_is_strict_and_configurable() -> None:
    score = analyse_heuristically(
        Exchange(agent_message=MESSAGE, operator_reply=KEEP), ()
    ).persistence_score
    at = policy_sim(persistence_threshold=score)
    at.start()
    reply(at, to_reply(at), KEEP)
    assert "PersistentMemoryRequested" not in types(at)  # not above it
    below = policy_sim(persistence_threshold=round(score - 0.01, 2))
    below.start()
    reply(below, to_reply(below), KEEP)
    assert types(below)[-1] == "PersistentMemoryRequested"


def test_without_the_policy_nothing_is_stored_and_the_agent_may_use_the_prefix() -> None:
    sim = Sim(
        make_config(cycle_count=1, operator={"mode": "human"}, cognition={"analysis": "heuristic"})
    )
    sim.start()
    reply(sim, to_reply(sim), KEEP)
    assert "PersistentMemoryRequested" not in types(sim)
    write = say("", ("write", {"key": "persistent/mine", "value": "v"}))
    sim.answer_llm(write)
    task = sim.task()
    assert isinstance(task, MemoryTask) and task.reserved_prefix is None  # as runs were


def test_with_the_policy_the_agents_memory_tasks_name_the_reserved_prefix() -> None:
    sim = policy_sim(cycles=1)
    sim.start()
    sim.answer_llm(say("", ("delete", {"key": "persistent/exchange-c001-s01-t00"})))
    task = sim.task()
    assert isinstance(task, MemoryTask) and task.tool == "delete"
    assert task.reserved_prefix == PERSISTENT_PREFIX  # the memory store refuses it


def test_a_model_analysis_holds_the_cycle_when_the_policy_is_on() -> None:
    sim = policy_sim("model")
    sim.start()
    call = to_reply(sim)
    decision = sim.send("OperatorReplied", task_id=call, text="ok")
    # Only the analysis is sent: the reply waits for it, and then for the store. It goes
    # to the run's line of its model, not the background line of analyses.
    (analysis,) = decision.tasks
    assert isinstance(analysis, LLMTask) and analysis.kind == "analysis"
    assert analysis.holds_cycle and not route_of(analysis).background
    assert types(sim)[-1] == "OperatorMessageAnalysisRequested"
    assert not sim.tasks and sim.state.phase == "tools"
    (task_id,) = sim.analyses
    decision = sim.answer_analysis(task_id, json.dumps(GOOD))  # the model scores it 0.9
    assert [e.type for e in decision.events] == [
        "OperatorMessageAnalyzed",
        "PersistentMemoryRequested",
    ]
    sim.answer_memory()
    assert types(sim)[-3:-1] == ["PersistentMemoryStored", "ToolCallCompleted"]
    assert isinstance(sim.task(), LLMTask) and sim.task().kind == "chat"
    finish_with_analyses(sim)
    assert sim.state.status == "completed"
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()


def finish_with_analyses(sim: Sim) -> None:
    for _ in range(100):
        if sim.state.terminal:
            return
        if sim.analyses:
            sim.answer_analysis(
                next(iter(sim.analyses)), json.dumps({**GOOD, "persistence_score": 0.2})
            )
            continue
        task = sim.task()
        if isinstance(task, MemoryTask):
            sim.answer_memory()
        else:
            sim.answer_llm(REFLECT if sim.state.step >= 1 else ASK)
            if sim.state.status == "waiting_operator":
                sim.send("OperatorReplied", task_id=sim.state.tool_queue[0].task_id, text="ok")
    raise AssertionError("the run did not end")


def test_a_failing_model_analysis_under_the_policy_ends_with_the_heuristic() -> None:
    sim = policy_sim("model", cycles=1, deadline_s=10)
    sim.start()
    call = to_reply(sim)
    sim.send("OperatorReplied", task_id=call, text=KEEP)
    (task_id,) = sim.analyses
    for send in (1, 2, 3):  # deadlines.retries is 2 by default: three sends
        decision = sim.send(
            "TaskFailed", task_id, task_id=task_id, send=send, cause="expired", reason="late"
        )
        assert decision.accepted, decision.ignored
    assert types(sim)[-3:] == ["TaskFailed", "OperatorMessageAnalyzed", "PersistentMemoryRequested"]
    stated = sim.log[-2]
    assert stated.analysis.analyser == "heuristic"
    assert "failed 3 time(s)" in (stated.fallback_reason or "")
    sim.answer_memory()
    assert types(sim)[-2:] == ["ToolCallCompleted", "LLMRequested"]
    assert replay_check(sim.log).ok


def test_a_fork_after_a_policy_store_sees_it_and_its_rebuild_matches() -> None:
    sim = policy_sim(cycles=3)
    sim.start()
    reply(sim, to_reply(sim), KEEP)
    finish(sim)
    assert sim.state.status == "completed"
    child = ForkSim(sim.log, "child", at_cycle=1)
    assert child.plan.forked.memory_calls == 1  # the kept exchange
    child.drive([REFLECT])
    assert child.state.status == "completed"
    assert child.memory == {
        "persistent/exchange-c001-s01-t00": sim.memory["persistent/exchange-c001-s01-t00"]
    }
    calls = memory_calls(child.log)
    assert [c.task.task_id for c in calls] == ["child/c1/s1/t0/persist"]
    assert replay_check(child.log).ok
