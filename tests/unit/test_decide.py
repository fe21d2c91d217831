"""The state machine, with no Redis: every transition of seed 003's cycle as decide
and fold express it, the step cap, tool errors, operator waits, duplicates."""

from __future__ import annotations

import pytest

from contreact_events.core.fold import fold, fold_all
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.prompt import prompt_messages
from contreact_events.core.state import AgentState
from contreact_events.core.tools import TOOLS_PARAGRAPH
from contreact_events.wire.tasks import LLMTask, MemoryTask
from tests.support.sim import Sim, make_config, say


def types(decision) -> list[str]:
    return [e.type for e in decision.events]


def test_request_asks_the_llm_worker_to_check_the_model() -> None:
    sim = Sim(make_config(backend="auto"))
    decision = sim.send("RunRequested", config=sim.config.model_dump(mode="json"))
    assert types(decision) == ["RunRequested"]
    (task,) = decision.tasks
    assert isinstance(task, LLMTask)
    assert (task.kind, task.backend, task.task_id) == ("check", "auto", "run-1/check")
    assert sim.state.status == "checking"


def test_passed_check_starts_the_run_and_the_first_cycle() -> None:
    sim = Sim(make_config())
    decision = sim.start()
    assert types(decision) == ["ModelChecked", "RunStarted", "CycleStarted", "LLMRequested"]
    started = decision.events[1]
    assert started.backend == "scripted"
    assert TOOLS_PARAGRAPH in started.system_prompt
    assert {t["function"]["name"] for t in started.tools} == {
        "write",
        "read",
        "list",
        "delete",
        "pattern_search",
        "send_message_to_operator",
    }
    (task,) = decision.tasks
    assert isinstance(task, LLMTask) and task.kind == "chat"
    assert [m.role for m in task.messages] == ["system", "user"]
    assert task.messages[1].content == "Cycle 1 begins."
    assert task.messages[0].content == started.system_prompt


def test_failed_check_fails_the_run_with_its_reason() -> None:
    sim = Sim(make_config())
    sim.send("RunRequested", config=sim.config.model_dump(mode="json"))
    reason = "model 'x' is not pulled on http://h:11434: run `ollama pull x`"
    decision = sim.send("ModelChecked", "run-1/check", ok=False, detail=reason)
    assert types(decision) == ["ModelChecked", "RunFailed"]
    assert decision.events[-1].reason == reason
    assert sim.state.status == "failed" and decision.tasks == ()


def test_answer_without_tool_call_is_the_reflection_and_ends_the_cycle() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    decision = sim.answer_llm(
        say("I will explore prime gaps."), prompt_tokens=7, completion_tokens=3, wall_s=1.5
    )
    assert types(decision) == [
        "LLMResponded",
        "ReflectionRecorded",
        "CycleEnded",
        "CycleStarted",
        "LLMRequested",
    ]
    ended = decision.events[2]
    assert ended.ended_by == "reflection"
    assert ended.metrics.response_chars == len("I will explore prime gaps.")
    assert ended.metrics.reflection_chars == len("I will explore prime gaps.")
    assert (ended.metrics.prompt_tokens, ended.metrics.completion_tokens) == (7, 3)
    assert ended.metrics.llm_seconds == 1.5
    assert sim.state.reflection_history == ("I will explore prime gaps.",)
    # The next cycle's prompt carries the history: cycle 1's turn and the reflection.
    (task,) = decision.tasks
    assert [m.role for m in task.messages] == ["system", "user", "assistant", "user"]
    assert task.messages[-1].content == "Cycle 2 begins."


def test_last_cycle_completes_the_run() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    decision = sim.answer_llm(say("done"))
    assert types(decision)[-1] == "RunCompleted"
    assert sim.state.status == "completed" and decision.tasks == ()
    assert pending_tasks(sim.state) == []


def test_tool_calls_run_one_after_another_then_the_llm_is_asked_again() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    decision = sim.answer_llm(
        say("", ("write", {"key": "k", "value": "hello"}), ("read", {"key": "k"}))
    )
    assert types(decision) == ["LLMResponded", "ToolCallRequested", "ToolCallRequested"]
    (first,) = decision.tasks
    assert isinstance(first, MemoryTask) and first.tool == "write"
    decision = sim.answer_memory()
    assert types(decision) == ["ToolCallCompleted"]
    (second,) = decision.tasks
    assert isinstance(second, MemoryTask) and second.tool == "read"
    decision = sim.answer_memory()
    assert types(decision) == ["ToolCallCompleted", "LLMRequested"]
    (task,) = decision.tasks
    assert [m.role for m in task.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert task.messages[-1].content == "hello" and task.messages[-1].tool_name == "read"
    assert (task.step, task.call_index) == (2, 1)
    sim.answer_llm(say("reflection"))
    metrics = sim.state.cycle_metrics[0]
    assert metrics.memory_ops_total == 2 and metrics.tool_calls == 2
    assert metrics.memory_write_chars == len("hello") and metrics.llm_calls == 2


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("fly", {"to": "moon"}), "unknown tool 'fly'"),
        (("write", {"key": "k"}), "missing argument(s) value"),
        (("read", {"key": 3}), "argument(s) key must be text"),
        (("list", {"x": "y"}), "unexpected argument(s) x"),
    ],
)
def test_bad_tool_calls_go_back_to_the_model_as_tool_results(call, expected) -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    decision = sim.answer_llm(say("", call))
    assert types(decision) == [
        "LLMResponded",
        "ToolCallRequested",
        "ToolCallCompleted",
        "LLMRequested",
    ]
    completed = decision.events[2]
    assert not completed.ok and expected in completed.output
    (task,) = decision.tasks
    assert task.messages[-1].role == "tool" and expected in task.messages[-1].content
    assert sim.state.metrics.tool_errors == 1


def test_unreadable_arguments_are_reported_to_the_model() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    message = say().model_copy(
        update={
            "tool_calls": (
                say("", ("write", {}))
                .tool_calls[0]
                .model_copy(update={"arguments_error": "not a JSON object: '{key: oops'"}),
            )
        }
    )
    decision = sim.answer_llm(message)
    completed = decision.events[2]
    assert completed.type == "ToolCallCompleted" and not completed.ok
    assert "could not be read" in completed.output


def test_step_cap_ends_the_cycle_explicitly() -> None:
    sim = Sim(make_config(cycle_count=1, max_steps_per_cycle=3, final_call_at_step_cap=False))
    sim.start()
    loop = say("", ("list", {}))
    sim.answer_llm(loop)
    sim.answer_memory()
    sim.answer_llm(loop)
    sim.answer_memory()
    decision = sim.answer_llm(say("still going", ("list", {})))
    assert types(decision) == [
        "LLMResponded",
        "StepLimitReached",
        "ReflectionRecorded",
        "CycleEnded",
        "RunCompleted",
    ]
    limit = decision.events[1]
    assert (limit.steps, limit.dropped_tool_calls) == (3, 1)
    assert decision.events[2].complete is False
    assert decision.events[3].ended_by == "step_limit"
    # The dropped call gets a tool message saying so: the transcript stays well formed.
    assert sim.state.message_history[-1].role == "tool"
    assert "limit of 3 steps" in sim.state.message_history[-1].content


def test_the_step_cap_bounds_an_endless_tool_loop() -> None:
    sim = Sim(make_config(cycle_count=2))  # default cap: 25 steps per cycle
    state = sim.drive([say("", ("list", {}))])
    assert state.status == "completed"
    assert [m.llm_calls for m in state.cycle_metrics] == [26, 26]  # 25 + the final call
    assert all(r == "" for r in state.reflection_history)


def test_at_the_step_cap_the_model_is_called_once_more_without_tools() -> None:
    sim = Sim(make_config(cycle_count=1, max_steps_per_cycle=2))
    sim.start()
    loop = say("", ("list", {}))
    sim.answer_llm(loop)
    sim.answer_memory()
    decision = sim.answer_llm(say("", ("list", {}), ("read", {"key": "a"})))
    assert types(decision) == ["LLMResponded", "StepLimitReached", "LLMRequested"]
    limit = decision.events[1]
    assert (limit.steps, limit.dropped_tool_calls, limit.final_call) == (2, 2, True)
    (task,) = decision.tasks
    assert task.tools == ()  # no tools: the answer is the reflection
    assert [m.role for m in task.messages[-2:]] == ["tool", "tool"]
    assert "answer without calling a tool" in task.messages[-1].content
    decision = sim.answer_llm(say("What I learned this cycle."))
    assert types(decision)[1:] == ["ReflectionRecorded", "CycleEnded", "RunCompleted"]
    assert decision.events[1].text == "What I learned this cycle."
    assert decision.events[1].complete is True
    assert decision.events[2].ended_by == "step_limit"


def test_a_final_call_that_still_calls_tools_ends_the_cycle_on_its_text() -> None:
    sim = Sim(make_config(cycle_count=2, max_steps_per_cycle=1))
    sim.start()
    sim.answer_llm(say("", ("list", {})))
    decision = sim.answer_llm(say("half a thought", ("list", {})))
    assert types(decision)[1:4] == ["StepLimitReached", "ReflectionRecorded", "CycleEnded"]
    assert decision.events[1].final_call is False
    assert decision.events[2].complete is False
    # The next cycle offers the tools again.
    (task,) = decision.tasks
    assert task.tools != ()


def test_operator_auto_policy_answers_at_once() -> None:
    sim = Sim(make_config(cycle_count=1, operator={"mode": "auto", "auto_reply": "Noted."}))
    sim.start()
    decision = sim.answer_llm(say("", ("send_message_to_operator", {"message": "Hello?"})))
    assert types(decision) == [
        "LLMResponded",
        "ToolCallRequested",
        "OperatorMessageSent",
        "OperatorReplied",
        "ToolCallCompleted",
        "LLMRequested",
    ]
    assert decision.events[3].by == "policy"
    assert decision.events[4].output == "Noted."
    assert sim.state.metrics.messages_to_operator == 1


def test_operator_human_mode_waits_for_the_reply() -> None:
    sim = Sim(make_config(cycle_count=1, operator={"mode": "human"}))
    sim.start()
    decision = sim.answer_llm(
        say("", ("send_message_to_operator", {"message": "Hello?"}), ("list", {}))
    )
    assert types(decision)[-1] == "OperatorMessageSent"
    assert decision.tasks == ()
    assert sim.state.status == "waiting_operator"
    waiting = sim.state.waiting_for
    assert waiting is not None and waiting.arguments == {"message": "Hello?"}
    # A reply to another task is ignored; the right one resumes the run.
    wrong = sim.send("OperatorReplied", None, task_id="run-1/c1/s1/t9", text="?")
    assert not wrong.accepted
    decision = sim.send("OperatorReplied", None, task_id=waiting.task_id, text="Hi there")
    assert types(decision) == ["OperatorReplied", "ToolCallCompleted"]
    assert decision.state.status == "running"
    (task,) = decision.tasks
    assert isinstance(task, MemoryTask) and task.tool == "list"
    # A second reply to the same message changes nothing.
    assert not sim.send("OperatorReplied", None, task_id=waiting.task_id, text="again").accepted


def test_duplicate_and_stale_results_change_nothing() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    llm_task = sim.task()
    sim.answer_llm(say("", ("write", {"key": "a", "value": "b"})))
    before = sim.state
    again = sim.send("LLMResponded", llm_task.task_id, message={"content": "late copy"})
    assert not again.accepted and "not pending" in (again.ignored or "")
    assert sim.state == before
    memory_task = sim.task()
    sim.answer_memory()
    dup = sim.send(
        "ToolCallCompleted",
        memory_task.task_id,
        task_id=memory_task.task_id,
        tool_name="write",
        output="Stored a.",
    )
    assert not dup.accepted
    early = sim.send("LLMResponded", "run-1/c2/s1", message={"content": "from the future"})
    assert not early.accepted
    unknown = sim.send("ModelChecked", "run-1/check", ok=True, backend="scripted")
    assert not unknown.accepted


def test_results_after_the_run_ended_are_ignored() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    task = sim.task()
    sim.send("RunCancelled", reason="enough")
    assert sim.state.status == "cancelled" and pending_tasks(sim.state) == []
    late = sim.send("LLMResponded", task.task_id, message={"content": "late"})
    assert not late.accepted and "has ended" in (late.ignored or "")
    assert not sim.send("RunCancelled").accepted


def test_llm_failure_fails_the_run_with_the_error() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    task = sim.task()
    decision = sim.send("LLMFailed", task.task_id, error="server said no", attempts=3)
    assert types(decision) == ["LLMFailed", "RunFailed"]
    assert "after 3 attempt(s): server said no" in decision.events[-1].reason


def test_a_second_request_for_the_same_run_is_ignored() -> None:
    sim = Sim(make_config())
    sim.start()
    again = sim.send("RunRequested", config=sim.config.model_dump(mode="json"))
    assert not again.accepted and "already exists" in (again.ignored or "")


def test_derived_events_have_deterministic_ids_and_a_causal_chain() -> None:
    sim = Sim(make_config())
    decision = sim.start()
    ids = [e.event_id for e in decision.events]
    assert ids == ["m2", "m2.1", "m2.2", "m2.3"]
    assert [e.causation_id for e in decision.events[1:]] == ["m2", "m2.1", "m2.2"]
    assert decision.events[0].causation_id == "run-1/check"
    assert all(e.ts == decision.events[0].ts for e in decision.events)
    assert all(e.correlation_id == "run-1" for e in decision.events)


def test_decide_is_pure_the_same_input_gives_the_same_decision() -> None:
    sim = Sim(make_config())
    sim.start()
    state, event = sim.state, sim.log[-1]
    from contreact_events.core.decide import decide

    again = Sim(make_config())
    again.start()
    assert again.state == state
    assert again.log == sim.log
    assert decide(AgentState(run_id="run-1"), sim.log[0]) == decide(
        AgentState(run_id="run-1"), sim.log[0]
    )
    del event


def test_fold_of_the_log_equals_the_live_state() -> None:
    sim = Sim(make_config(cycle_count=3))
    sim.start()
    sim.drive([say("", ("write", {"key": "x", "value": "1"})), say("thinking about x")])
    assert fold_all(sim.log) == sim.state
    assert fold_all(sim.log).digest() == sim.state.digest()


def test_the_prompt_rebuilt_by_fold_is_what_the_task_carried() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    sent = [sim.task()]
    sim.answer_llm(say("", ("list", {})))
    sim.answer_memory()
    sent.append(sim.task())
    state = AgentState(run_id="run-1")
    rebuilt = []
    for event in sim.log:
        state = fold(state, event)
        if event.type == "LLMRequested":
            rebuilt.append(prompt_messages(state))
    assert rebuilt == [task.messages for task in sent]
