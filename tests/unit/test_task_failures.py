"""Nothing waits forever, in the pure core: deadlines of every wait, TaskFailed inputs
(expired, dead-lettered, rejected), retries within the budget, then the run's end with
the reason; the operator wait's timeout; late and foreign failures change nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from contreact_events.config import parse_run_config
from contreact_events.core.decide import decide
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import pending_tasks, waiting_deadline
from contreact_events.exceptions import ConfigError
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask
from tests.support.sim import Sim, make_config, say


def types(decision) -> list[str]:
    return [e.type for e in decision.events]


def fail(sim: Sim, cause: str = "expired", send: int | None = None, task_id: str | None = None):
    task_id = task_id or sim.state.pending_task_id
    return sim.send(
        "TaskFailed", task_id, task_id=task_id, cause=cause, reason="no answer", send=send
    )


def test_every_task_carries_its_deadline_and_send() -> None:
    sim = Sim(make_config(deadlines={"check_s": 30, "llm_s": 90}))
    sim.send("RunRequested", config=sim.config.model_dump(mode="json"))
    (check,) = sim.tasks
    requested = sim.log[0].ts
    assert (check.deadline, check.send) == (requested + timedelta(seconds=30), 1)
    sim.send("ModelChecked", check.task_id, ok=True, backend="scripted", model="m")
    (chat,) = sim.tasks
    assert chat.deadline == sim.log[-1].ts + timedelta(seconds=90)
    assert waiting_deadline(sim.state) == (chat.task_id, chat.deadline)


def test_the_llm_deadline_follows_the_client_timeout_unless_set() -> None:
    assert make_config().llm_deadline_s() == 3 * 600 + 60
    assert make_config(ollama_client_config={"timeout_s": 100}).llm_deadline_s() == 360
    assert make_config(deadlines={"llm_s": 42}).llm_deadline_s() == 42


def test_an_openai_runs_llm_deadline_follows_the_openai_timeout() -> None:
    slow = {"timeout_s": 1800.0}
    config = make_config(backend="openai", openai_client_config=slow)
    assert config.llm_deadline_s() == 3 * 1800 + 60  # not the Ollama client's 600
    assert config.llm_deadline_s("ollama") == 3 * 600 + 60
    auto = make_config(backend="auto", openai_client_config=slow)
    assert auto.llm_deadline_s("openai") == 3 * 1800 + 60  # as resolved by the check


def test_the_call_task_carries_the_deadline_of_the_backend_the_check_chose() -> None:
    config = make_config(backend="auto", openai_client_config={"timeout_s": 1000.0})
    sim = Sim(config)
    sim.send("RunRequested", config=config.model_dump(mode="json"))
    (check,) = sim.tasks
    sim.send("ModelChecked", check.task_id, ok=True, backend="openai", model="m")
    (chat,) = sim.tasks
    assert chat.deadline == sim.log[-1].ts + timedelta(seconds=3 * 1000 + 60)


def test_an_expired_llm_call_is_sent_again_then_the_run_fails_with_the_reason() -> None:
    sim = Sim(make_config(deadlines={"retries": 2}))
    sim.start()
    first = sim.task()
    decision = fail(sim)
    assert types(decision) == ["TaskFailed", "TaskRetried"]
    (again,) = decision.tasks
    assert isinstance(again, LLMTask)
    assert (again.task_id, again.send, again.messages) == (first.task_id, 2, first.messages)
    assert again.deadline is not None and first.deadline is not None
    assert again.deadline > first.deadline  # counted from the retry
    assert types(fail(sim)) == ["TaskFailed", "TaskRetried"]
    decision = fail(sim)
    assert types(decision) == ["TaskFailed", "RunFailed"]
    assert sim.state.status == "failed"
    reason = sim.state.failure_reason or ""
    assert "the LLM call run-1/c1/s1 failed 3 time(s)" in reason and "no answer" in reason
    assert decision.tasks == ()


def test_a_late_failure_of_an_earlier_send_changes_nothing() -> None:
    sim = Sim(make_config())
    sim.start()
    fail(sim, send=1)
    decision = fail(sim, send=1)  # the timer and a dead letter both reported send 1
    assert decision.ignored is not None and "send 1" in decision.ignored
    assert sim.state.task_sends == 2


def test_a_failure_of_a_task_the_run_does_not_wait_on_is_ignored() -> None:
    sim = Sim(make_config())
    sim.start()
    decision = fail(sim, task_id="run-1/c9/s9")
    assert decision.ignored is not None and "does not wait on" in decision.ignored


def test_the_answer_of_the_first_send_still_counts_after_a_retry() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    fail(sim)  # expired, sent again; then the slow first send answers
    decision = sim.answer_llm(say("my reflection"))
    assert types(decision)[:2] == ["LLMResponded", "ReflectionRecorded"]
    assert sim.state.status == "completed"
    report = replay_check(sim.log)
    assert report.ok and report.state == sim.state


def test_a_memory_task_is_retried_and_its_answer_accepted() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    sim.answer_llm(say("", ("write", {"key": "k", "value": "v"})))
    (task,) = sim.tasks
    assert isinstance(task, MemoryTask)
    decision = fail(sim, cause="dead_lettered")
    assert types(decision) == ["TaskFailed", "TaskRetried"]
    assert decision.tasks[0].task_id == task.task_id and decision.tasks[0].send == 2
    sim.answer_memory()
    assert sim.state.phase == "awaiting_llm"


def test_an_embedding_that_keeps_failing_ends_the_cycle_without_an_assessment() -> None:
    sim = Sim(make_config(cycle_count=2, diversity={"enabled": True}, deadlines={"retries": 0}))
    sim.start()
    sim.answer_llm(say("a reflection worth embedding"))
    assert isinstance(sim.task(), EmbedTask)
    decision = fail(sim, cause="rejected")
    assert types(decision)[:4] == ["TaskFailed", "EmbeddingFailed", "CycleEnded", "CycleStarted"]
    assert "the reflection embedding run-1/c1/embed failed 1 time(s)" in decision.events[1].error
    assert sim.state.status == "running" and sim.state.cycle_number == 2


def test_the_operator_wait_ends_with_the_policy_reply_after_its_timeout() -> None:
    operator = {"mode": "human", "timeout_s": 600, "auto_reply": "Carry on."}
    sim = Sim(make_config(cycle_count=1, operator=operator))
    sim.start()
    sim.answer_llm(say("", ("send_message_to_operator", {"message": "anyone there?"})))
    assert sim.state.status == "waiting_operator" and sim.tasks == []
    head = sim.state.waiting_for
    assert head is not None
    sent_at = sim.log[-1].ts
    assert waiting_deadline(sim.state) == (head.task_id, sent_at + timedelta(seconds=600))
    decision = fail(sim, task_id=head.task_id)
    assert types(decision)[:3] == ["TaskFailed", "OperatorReplied", "ToolCallCompleted"]
    reply = decision.events[1]
    assert (reply.by, reply.text) == ("timeout", "Carry on.")
    after = decision.state
    assert (after.status, after.phase) == ("running", "awaiting_llm")
    sim.answer_llm(say("done"))
    assert replay_check(sim.log).ok


def test_without_a_timeout_the_operator_wait_has_no_deadline() -> None:
    sim = Sim(make_config(operator={"mode": "human"}))
    sim.start()
    sim.answer_llm(say("", ("send_message_to_operator", {"message": "hello"})))
    assert waiting_deadline(sim.state) is None
    head = sim.state.waiting_for
    assert head is not None
    assert fail(sim, cause="dead_lettered", task_id=head.task_id).ignored is not None


def test_a_retry_is_replayed_exactly_and_rebuilds_the_same_state() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    fail(sim, cause="expired")
    sim.drive([say("thinking")])
    assert sim.state.status == "completed"
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert fold_all(sim.log) == sim.state


def test_recovery_sends_the_current_send_with_its_deadline() -> None:
    sim = Sim(make_config())
    sim.start()
    fail(sim)
    state = fold_all(sim.log)
    (task,) = pending_tasks(state)
    assert task == sim.tasks[0]  # what a restarted orchestrator sends is the same copy


def test_deadlines_are_validated() -> None:
    base = make_config().model_dump(mode="json")
    with pytest.raises(ConfigError, match=r"deadlines\.check_s"):
        parse_run_config({**base, "deadlines": {"check_s": 0}})
    with pytest.raises(ConfigError, match=r"operator\.timeout_s"):
        parse_run_config({**base, "operator": {"mode": "human", "timeout_s": -1}})


def test_decide_ignores_failures_after_the_run_ended() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.drive([say("done")])
    late = fail(sim, task_id="run-1/c1/s1")
    assert late.ignored is not None and "ended" in late.ignored
    assert decide(sim.state, sim.log[-1]).ignored is not None
