"""``memory_calls``: the core's one rule for which tool calls the memory service
executed, checked against the tasks ``decide`` really sent (a pure Sim run)."""

from __future__ import annotations

from typing import Any

from contreact_events.catalog.chat import AssistantMessage, ToolCall
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.decide import Decision
from contreact_events.history.memory_calls import memory_calls
from contreact_events.wire.tasks import EmbedTask, MemoryTask
from tests.support.sim import Sim, make_config, say


class RecordingSim(Sim):
    """A Sim that keeps every memory task ``decide`` sent, and the answered ones."""

    def __init__(self, **config: Any) -> None:
        super().__init__(make_config(operator={"mode": "auto"}, **config))
        self.sent: list[MemoryTask] = []
        self.answered: list[str] = []

    def send(self, kind: str, causation: str | None = None, **data: Any) -> Decision:
        decision = super().send(kind, causation, **data)
        self.sent += [t for t in decision.tasks if isinstance(t, MemoryTask)]
        if decision.accepted and kind == "ToolCallCompleted":
            self.answered.append(data["task_id"])
        return decision

    def answer_embedding(self) -> Decision:
        task = self.task()
        if isinstance(task, EmbedTask) and task.kind == "search":  # search_memory's result
            return self.send(
                "ToolCallCompleted",
                task.task_id,
                task_id=task.task_id,
                tool_name="search_memory",
                output="nothing close",
                ok=True,
            )
        return super().answer_embedding()


def garbled(name: str) -> ToolCall:
    return ToolCall(name=name, arguments={}, arguments_error="Expecting value: line 1")


def ids(events: list[Any]) -> list[str]:
    return [call.task.task_id for call in memory_calls(events)]


def test_a_write_over_the_value_cap_is_not_a_memory_call() -> None:
    sim = RecordingSim(limits={"memory_value_chars": 30})
    cycle = say(
        "", ("write", {"key": "big", "value": "x" * 50}), ("write", {"key": "k", "value": "v"})
    )
    sim.drive([cycle, say("done")])
    refused = next(e for e in sim.log if isinstance(e, ToolCallCompleted) and not e.ok)
    assert "the limit is 30" in refused.output  # answered by the orchestrator itself
    calls = memory_calls(sim.log)
    assert [c.task.arguments for c in calls] == [{"key": "k", "value": "v"}] * 2  # 2 cycles
    assert refused.task_id not in ids(sim.log)


def test_the_calls_are_exactly_the_memory_tasks_decide_sent_and_saw_answered() -> None:
    """Every way a tool call can end, against what the orchestrator really sent."""
    sim = RecordingSim(
        limits={"memory_value_chars": 30, "tool_argument_chars": 20},
        tools={"search_memory": True},
        cycle_count=1,
    )
    first = AssistantMessage(
        tool_calls=(
            ToolCall(name="write", arguments={"key": "a", "value": "1"}),  # executed
            ToolCall(name="write", arguments={"key": "b", "value": "y" * 31}),  # value cap
            ToolCall(name="read", arguments={"key": "k" * 21}),  # argument cap
            ToolCall(name="fly", arguments={"to": "moon"}),  # unknown tool
            garbled("write"),  # unreadable arguments
            ToolCall(name="write", arguments={"key": "c"}),  # a missing argument
            ToolCall(name="delete", arguments={"key": 7}),  # a mistyped argument
            ToolCall(name="read", arguments={"key": "nothing"}),  # executed, ok=False
            ToolCall(name="search_memory", arguments={"query": "q"}),  # the embedder's
            ToolCall(name="send_message_to_operator", arguments={"message": "hi"}),
            ToolCall(name="list", arguments={}),  # executed
        )
    )
    state = sim.drive([first, say("a reflection")])
    assert state.status == "completed"
    tools = [c.task.tool for c in memory_calls(sim.log)]
    assert tools == ["write", "read", "list"]
    assert ids(sim.log) == [t.task_id for t in sim.sent if t.task_id in sim.answered]
    for call in memory_calls(sim.log):
        (task,) = [t for t in sim.sent if t.task_id == call.task.task_id]
        assert call.task == task  # the task as sent: arguments and ts included
        assert call.result.task_id == task.task_id


def test_a_redelivered_result_counts_once_and_a_retried_task_once() -> None:
    sim = RecordingSim(cycle_count=1)
    sim.start()
    sim.answer_llm(say("", ("write", {"key": "a", "value": "1"})))
    task = sim.task()
    failed = sim.send("TaskFailed", task_id=task.task_id, cause="expired", reason="late", send=1)
    assert failed.accepted and [t.send for t in failed.tasks] == [2]
    answer = {"task_id": task.task_id, "tool_name": "write", "output": "Stored a.", "ok": True}
    assert sim.send("ToolCallCompleted", task.task_id, **answer).accepted
    assert not sim.send("ToolCallCompleted", task.task_id, **answer).accepted  # redelivered
    sim.drive([say("done")])
    assert ids(sim.log) == [task.task_id]
    assert memory_calls(sim.log)[0].task.ts == task.ts  # the request's time, not the retry's


def test_a_call_of_a_cancelled_run_whose_result_came_too_late_is_not_a_call() -> None:
    sim = RecordingSim(cycle_count=1)
    sim.start()
    sim.answer_llm(
        say("", ("write", {"key": "a", "value": "1"}), ("write", {"key": "b", "value": "2"}))
    )
    sim.answer_memory()
    late = sim.task()
    assert sim.send("RunCancelled", reason="stop").accepted
    answer = {"task_id": late.task_id, "tool_name": "write", "output": "Stored b.", "ok": True}
    assert not sim.send("ToolCallCompleted", late.task_id, **answer).accepted
    assert [c.task.arguments["key"] for c in memory_calls(sim.log)] == ["a"]


def test_a_prefix_of_the_log_gives_the_calls_up_to_there() -> None:
    """How a fork seeds its child's memory: the parent's calls up to the fork point."""
    sim = RecordingSim(cycle_count=3)
    sim.drive([say("", ("write", {"key": "n", "value": "v"})), say("done")])
    every = ids(sim.log)
    assert len(every) == 3
    cut = next(i for i, e in enumerate(sim.log) if e.type == "CycleEnded")
    assert ids(sim.log[: cut + 1]) == every[:1]
