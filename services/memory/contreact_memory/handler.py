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
from contreact_events.tasks import MemoryTask, tool_completed
from contreact_memory.store import MemoryStore

log = logging.getLogger(__name__)


class MemoryHandler:
    """The ``serve`` handler of the memory service."""

    def __init__(self, store: MemoryStore, inbox: Inbox) -> None:
        self._store = store
        self._inbox = inbox

    async def __call__(self, task: MemoryTask) -> None:
        outcome = await asyncio.to_thread(self._store.apply, task)
        log.debug("%s %s of run %s: ok=%s", task.task_id, task.tool, task.run_id, outcome.ok)
        await self._inbox.send(tool_completed(task, outcome.output, ok=outcome.ok))
