"""Forks in the pure driver: a child ``Sim`` whose log is a parent's plan (the re-keyed
prefix, then ``RunForked``), with the memory seed answered as the memory service does
(the prefix's executed memory calls replayed into the child's memory)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from contreact_events.catalog import Event
from contreact_events.config.overrides import parse_assignments
from contreact_events.core.decide import Decision, decide
from contreact_events.core.state import AgentState
from contreact_events.core.tools import SEED_TOOL
from contreact_events.history.fork import ForkPlan, plan_fork
from contreact_events.history.memory_calls import memory_calls
from contreact_events.wire.tasks import LLMTask, MemoryTask
from tests.support.sim import T0, Reply, Sim, apply_memory


class ForkSim(Sim):
    """A fork of ``parent_log``: its state is the plan's decision, its log the child's."""

    def __init__(
        self,
        parent_log: Sequence[Event],
        child_run_id: str,
        at_cycle: int,
        *,
        model: str | None = None,
        settings: Sequence[str] = (),
        question: str = "",
    ) -> None:
        self.plan: ForkPlan = plan_fork(
            parent_log,
            child_run_id=child_run_id,
            at_cycle=at_cycle,
            model=model,
            assignments=parse_assignments(settings),
            event_id="fork-1",
            ts=T0 + timedelta(days=1),
            version="test",
            question=question,
        )
        super().__init__(self.plan.forked.config)
        self._clock = 100_000
        decision = decide(self.plan.state, self.plan.forked)
        assert decision.accepted, decision.ignored
        self.state = decision.state
        self.log = [*self.plan.prefix, *decision.events]
        self.tasks = list(decision.tasks)

    def answer_memory(self) -> Decision:
        task = self.task()
        if isinstance(task, MemoryTask) and task.tool == SEED_TOOL:
            calls = memory_calls(self.log[: task.arguments["events"]])
            for call in calls:
                apply_memory(self.memory, call.task.tool, call.task.arguments)
            return self.send(
                "MemorySeeded", task.task_id, task_id=task.task_id, calls=len(calls), ok=True
            )
        return super().answer_memory()

    def drive(self, replies: Sequence[Reply], *, max_inputs: int = 100_000) -> AgentState:
        """Seed, check the model, then run the remaining cycles."""
        while self.tasks and isinstance(self.tasks[0], MemoryTask):
            self.answer_memory()
        check = self.task()
        assert isinstance(check, LLMTask) and check.kind == "check", check
        self.send("ModelChecked", check.task_id, ok=True, backend="scripted", model=check.model)
        return super().drive(replies, max_inputs=max_inputs)
