"""Pause, resume and step in the pure core (issue 31): a paused run finishes what it
waits on, then rests before its next model call or cycle with no task and no deadline;
a stepping run makes one model call per step; all of it replays exactly."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.catalog.cycle import LLMRequested
from contreact_events.config.experiment_resume import ACTIVE_STATUSES
from contreact_events.core.outbox import pending_tasks, waiting_deadline
from contreact_events.core.state import RESTING_STATUSES
from contreact_events.history.replay import replay_check
from contreact_events.history.run_summary import RunListing, listing_fields, run_summary
from contreact_events.wire.codec import event_from_json, event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say


def tool_then_reflect(task: LLMTask) -> Any:
    if task.step == 1:
        return say("", ("write", {"key": f"k{task.cycle}", "value": "v"}))
    return say(f"reflection {task.cycle}")


def calls(sim: Sim) -> int:
    return sum(isinstance(e, LLMRequested) for e in sim.log)


def replays(sim: Sim) -> None:
    log = [event_from_json(event_to_json(e)) for e in sim.log]
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()


def test_a_paused_run_rests_before_its_next_model_call_holding_nothing() -> None:
    sim = Sim(make_config(run_id="p", cycle_count=2))
    sim.start()
    assert sim.state.phase == "awaiting_llm"
    paused = sim.send("RunPaused", None, by="ana", reason="lunch")
    assert paused.accepted and not paused.tasks
    sim.drive([tool_then_reflect])  # the call in flight is answered, its tool call made
    rested = sim.state
    assert rested.phase == "calling" and rested.paused
    assert sim.state.pending_task_id is None and not sim.tasks
    assert pending_tasks(sim.state) == [] and waiting_deadline(sim.state) is None
    assert calls(sim) == 1
    again = sim.send("RunPaused", None, by="ana")
    assert again.ignored == "run p is paused already"
    resumed = sim.send("RunResumed", None, by="ana")
    assert resumed.accepted and [t.task_id for t in resumed.tasks] == ["p/c1/s2"]
    sim.drive([tool_then_reflect])
    assert sim.state.status == "completed" and sim.state.cycle_number == 2
    replays(sim)


def test_a_run_paused_between_cycles_does_not_start_the_next() -> None:
    sim = Sim(make_config(run_id="p", cycle_count=3))
    sim.start()
    sim.answer_llm(say("one"))  # cycle 1's answer: cycle 2's first call is sent
    assert sim.state.cycle_number == 2
    sim.send("RunPaused", None, by="ana")
    sim.drive([say("two")])  # cycle 2 ends; cycle 3 does not start
    assert sim.state.phase == "cycle_end" and sim.state.cycle_number == 2
    assert not sim.tasks and pending_tasks(sim.state) == []
    sim.send("RunResumed", None, by="ana")
    sim.drive([say("three")])
    assert sim.state.status == "completed"
    replays(sim)


@pytest.mark.parametrize("how", ["in the request", "by a pause after it (older runs)"])
def test_a_stepping_run_makes_one_model_call_per_step(how: str) -> None:
    sim = Sim(make_config(run_id="s", cycle_count=2))
    in_request = how == "in the request"
    config = sim.config.model_dump(mode="json")
    assert sim.send("RunRequested", config=config, stepping=in_request).accepted
    if not in_request:
        assert sim.send("RunPaused", None, by="ana", stepping=True).accepted
    assert listed(sim) == "checking" and sim.state.stepping
    check = sim.task()
    sim.send("ModelChecked", check.task_id, ok=True, backend="scripted", model="test-model")
    assert sim.state.phase == "calling" and calls(sim) == 0  # rests before its first call
    for expected in range(1, 5):
        stepped = sim.send("RunResumed", None, by="ana", step=True)
        assert stepped.accepted, stepped.ignored
        sim.drive([tool_then_reflect])
        assert calls(sim) == expected
    assert sim.state.status == "completed"
    replays(sim)


def test_a_step_to_a_run_not_stepping_is_refused_with_one_line() -> None:
    sim = Sim(make_config(run_id="n", cycle_count=2))
    sim.start()
    refused = sim.send("RunResumed", None, by="ana", step=True)
    assert refused.ignored is not None and "run n is not stepping" in refused.ignored
    assert "\n" not in refused.ignored
    assert sim.send("RunResumed", None, by="ana").ignored == "run n is not paused"


def test_a_fork_of_a_paused_run_runs() -> None:
    sim = Sim(make_config(run_id="p", cycle_count=2))
    sim.start()
    sim.send("RunPaused", None, by="ana")
    sim.drive([tool_then_reflect])
    sim.send("RunResumed", None, by="ana")
    sim.drive([tool_then_reflect])
    child = ForkSim(sim.log, "p-2", 1, settings=["cycle_count=2"])
    assert not child.state.paused
    child.drive([tool_then_reflect])
    assert child.state.status == "completed"


def listed(sim: Sim) -> str:
    """The status every listing shows, checked to be one value in all of them."""
    summary = run_summary(sim.state)
    fields = listing_fields(sim.state)
    assert RunListing.from_hash(fields) == summary.listing()
    assert summary.status == fields["status"] == sim.state.listed_status
    return summary.status


def test_a_paused_or_stepping_run_lists_as_paused_or_stepping_and_as_live() -> None:
    sim = Sim(make_config(run_id="l", cycle_count=2))
    sim.start()
    assert listed(sim) == "running"
    sim.send("RunPaused", None, by="ana")
    assert listed(sim) == "paused"  # at once: it finishes the call in flight, then rests
    sim.drive([tool_then_reflect])
    assert listed(sim) == "paused" and sim.state.status == "running"  # the fold's own
    assert RESTING_STATUSES <= ACTIVE_STATUSES  # an experiment run again leaves it alone
    sim.send("RunResumed", None, by="ana")
    assert listed(sim) == "running"
    sim.send("RunPaused", None, by="ana", stepping=True)
    assert listed(sim) == "stepping"
    sim.send("RunResumed", None, by="ana", step=True)
    assert listed(sim) == "stepping"  # between steps and during one
    sim.send("RunResumed", None, by="ana")
    sim.drive([tool_then_reflect])
    assert listed(sim) == "completed"


def test_a_paused_run_waiting_for_the_operator_lists_as_waiting_for_the_operator() -> None:
    def asks(task: LLMTask) -> Any:
        return say("", ("send_message_to_operator", {"message": "anyone?"}))

    sim = Sim(make_config(run_id="w", cycle_count=1, operator={"mode": "human"}))
    sim.start()
    sim.send("RunPaused", None, by="ana")
    sim.drive([asks])
    assert sim.state.status == "waiting_operator" and sim.state.paused
    assert listed(sim) == "waiting_operator"  # the reply is needed first
    assert listing_fields(sim.state)["waiting_task"]
