"""``memory_calls(events)``: the memory tool calls the memory service executed in a
run, in log order. Pure.

The one rule for "which calls reached the memory service", for everything that
replays a run's memory: ``memory-rebuild`` (the memory store is a projection of
these calls), and a fork, which seeds its child's memory by applying the calls of
the parent's log up to the fork point (``MemoryStore.apply`` of each ``task``, with
the child's run id).

Nothing here restates the orchestrator's conditions (unknown tool, unreadable or
invalid arguments, an argument over its size cap, a tool another worker answers):
the log is folded, and a call counts when, just before its ``ToolCallCompleted``
was folded, the run was waiting on exactly that memory task
(``pending_tasks``, what ``decide`` sends). A call the orchestrator answered itself
never was such a task; a call whose result is not in the log (the log ends first,
or the run was cancelled or failed in between) has no ``ToolCallCompleted``; a
result that arrived twice was logged once (``decide`` ignores the repeat).

The memory policy's stores (``cognition.memory_policy``: a kept exchange, tool
``persist``) count by the same rule: a ``PersistentMemoryStored`` folded while the run
waited on exactly that memory task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import PersistentMemoryStored
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.state import AgentState
from contreact_events.wire.tasks import MemoryTask


@dataclass(frozen=True)
class MemoryCall:
    """One executed memory call: the task as the orchestrator sent it (its id, tool,
    arguments and ``ts``, the request's time, which becomes the entry's
    ``updated_at``) and the result the log holds for it (a tool call's, or the memory
    policy's ``PersistentMemoryStored``)."""

    task: MemoryTask
    result: ToolCallCompleted | PersistentMemoryStored


def memory_calls(events: Iterable[Event]) -> list[MemoryCall]:
    """The memory calls of one run's log (or of a prefix of it) that the memory
    service executed, in the order it executed them. Raises what ``fold`` raises
    for a log that does not fold (another run's event, an impossible order)."""
    return folded_memory_calls(events)[1]


def folded_memory_calls(events: Iterable[Event]) -> tuple[AgentState | None, list[MemoryCall]]:
    """The state the events fold to (None: no events) and their ``memory_calls``, from
    one pass of ``fold_all`` (its draft: no new state per event)."""
    it = iter(events)
    first = next(it, None)
    if first is None:
        return None, []
    calls: list[MemoryCall] = []

    def note(state: AgentState, event: Event) -> None:
        if isinstance(event, ToolCallCompleted | PersistentMemoryStored):
            task = sent_memory_task(state)
            if task is not None and task.task_id == event.task_id:
                calls.append(MemoryCall(task=task, result=event))

    state = fold_all(chain((first,), it), before=note)
    return state, calls


def sent_memory_task(state: AgentState) -> MemoryTask | None:
    """The memory task the run waits on in ``state``, as the orchestrator sent it
    (None when it waits on anything else, or on nothing)."""
    for task in pending_tasks(state):
        if isinstance(task, MemoryTask):
            return task
    return None
