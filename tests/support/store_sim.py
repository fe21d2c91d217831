"""A pure Sim run whose memory tasks a real ``MemoryStore`` answers, as the memory
service does: the store it leaves is the live store of that run."""

from __future__ import annotations

from contreact_events.config import RunConfig
from contreact_events.core.decide import Decision
from contreact_events.wire.tasks import MemoryTask
from contreact_memory.store import MemoryStore
from tests.support.sim import Sim


class StoreSim(Sim):
    def __init__(self, config: RunConfig, store: MemoryStore) -> None:
        super().__init__(config)
        self.store = store

    def answer_memory(self) -> Decision:
        task = self.task()
        assert isinstance(task, MemoryTask), task
        outcome = self.store.apply(task)
        return self.send(
            "ToolCallCompleted",
            task.task_id,
            task_id=task.task_id,
            tool_name=task.tool,
            output=outcome.output,
            ok=outcome.ok,
        )
