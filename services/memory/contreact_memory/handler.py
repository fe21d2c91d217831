"""One memory task in, one tool result out: apply the task to the store (exactly
once), then write the ``ToolCallCompleted`` message to the orchestrator's inbox.

Tool-level problems (unknown tool, bad arguments, a missing key) are results with
``ok=False``, decided by the store. Anything else (the disk is full, the file is
locked too long, Redis is down) propagates: ``serve`` then leaves the entry pending
and it is retried, and a repeat of an already applied task gets the recorded result.

A fork's seed task (tool ``seed``) is answered with ``MemorySeeded``: the memory calls
of the fork's copied prefix (the first ``arguments["events"]`` events of its log, read
from Redis; ``history.memory_calls``, the rule ``memory-rebuild`` replays) applied under the
fork's run id, in one transaction.

The memory policy's task (tool ``persist``, ``cognition.memory_policy``) is answered with
``PersistentMemoryStored``: an exchange kept under the reserved prefix.
"""

from __future__ import annotations

import asyncio
import logging

from contreact_bus.run_log import RunLog
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.task_gate import TaskGate
from contreact_events.cognition.policy import POLICY_TOOL
from contreact_events.core.tools import SEED_TOOL
from contreact_events.history.memory_calls import memory_calls
from contreact_events.wire.answers import kept_stored, memory_seeded, tool_completed
from contreact_events.wire.tasks import MemoryTask
from contreact_memory.exceptions import SeedUnavailable
from contreact_memory.store import MemoryStore

log = logging.getLogger(__name__)


class MemoryHandler:
    """The ``serve`` handler of the memory service. A task already applied is answered
    with its recorded result; a new one is applied only if its run's log asked for
    exactly it (``TaskGate``), else dropped with the reason. (``gate=None`` skips the
    check: for tests that exercise the store's own exactly-once logic.) ``run_log``
    reads a fork's prefix for its seed."""

    def __init__(
        self,
        store: MemoryStore,
        inbox: Inbox,
        gate: TaskGate | None,
        run_log: RunLog | None = None,
    ) -> None:
        self._store = store
        self._inbox = inbox
        self._gate = gate
        self._run_log = run_log

    async def __call__(self, task: MemoryTask) -> None:
        gate = self._gate
        if gate is not None:
            # The store's record and the run's gate are read side by side (the gate's
            # round trip overlaps the store's thread hop: issue 20); a task applied
            # before is answered whatever the gate now says, as it always was.
            recorded, refusal = await asyncio.gather(
                asyncio.to_thread(self._store.recorded, task.task_id),
                gate.refusal(task.run_id, task.task_id, task, task.deadline),
            )
            if recorded is None and refusal is not None:
                log.warning("memory task dropped, not applied: %s", refusal)
                return
        if task.tool == SEED_TOOL:
            await self._seed(task)
            return
        outcome = await asyncio.to_thread(self._store.apply, task)
        log.debug("%s %s of run %s: ok=%s", task.task_id, task.tool, task.run_id, outcome.ok)
        if task.tool == POLICY_TOOL:
            await self._inbox.send(kept_stored(task, outcome.output, ok=outcome.ok))
            return
        await self._inbox.send(tool_completed(task, outcome.output, ok=outcome.ok))

    async def _seed(self, task: MemoryTask) -> None:
        if self._run_log is None:
            raise SeedUnavailable(f"{task.task_id}: this memory handler reads no run logs")
        wanted = int(task.arguments.get("events", 0))
        entries = await self._run_log.read(task.run_id, limit=wanted)
        if len(entries) < wanted:  # not an answer: left pending, tried again
            raise SeedUnavailable(
                f"{task.task_id}: the log of run {task.run_id} holds {len(entries)} of the "
                f"{wanted} events its seed replays"
            )
        calls = memory_calls(event for _, event in entries)
        outcome = await asyncio.to_thread(self._store.seed, task, calls)
        log.info("run %s: memory seeded with %d call(s): %s", task.run_id, len(calls), outcome)
        detail = "" if outcome.ok else outcome.output
        await self._inbox.send(memory_seeded(task, len(calls), ok=outcome.ok, detail=detail))
