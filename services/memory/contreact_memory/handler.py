"""One memory task in, one tool result out: apply the task to the store (exactly
once), then write the ``ToolCallCompleted`` message to the orchestrator's inbox.

Tool-level problems (unknown tool, bad arguments, a missing key) are results with
``ok=False``, decided by the store. Anything else (the disk is full, the file is
locked too long, Redis is down) propagates: ``serve`` then leaves the entry pending
and it is retried, and a repeat of an already applied task gets the recorded result.
"""

from __future__ import annotations

import asyncio
import logging

from contreact_bus.inbox import Inbox
from contreact_bus.task_gate import TaskGate
from contreact_events.wire.tasks import MemoryTask, tool_completed
from contreact_memory.store import MemoryStore

log = logging.getLogger(__name__)


class MemoryHandler:
    """The ``serve`` handler of the memory service. A task already applied is answered
    with its recorded result; a new one is applied only if its run's log asked for
    exactly it (``TaskGate``), else dropped with the reason. (``gate=None`` skips the
    check: for tests that exercise the store's own exactly-once logic.)"""

    def __init__(self, store: MemoryStore, inbox: Inbox, gate: TaskGate | None) -> None:
        self._store = store
        self._inbox = inbox
        self._gate = gate

    async def __call__(self, task: MemoryTask) -> None:
        gate = self._gate
        if gate is not None and await asyncio.to_thread(self._store.recorded, task.task_id) is None:
            refusal = await gate.refusal(task.run_id, task.task_id, task, task.deadline)
            if refusal is not None:
                log.warning("memory task dropped, not applied: %s", refusal)
                return
        outcome = await asyncio.to_thread(self._store.apply, task)
        log.debug("%s %s of run %s: ok=%s", task.task_id, task.tool, task.run_id, outcome.ok)
        await self._inbox.send(tool_completed(task, outcome.output, ok=outcome.ok))
