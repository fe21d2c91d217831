"""``decide(state, event) -> Decision``: what the orchestrator does with one input.

Pure. An input event (a worker result or a CLI command) is accepted only when the
run waits for exactly it; a duplicate, stale or out-of-order input is ignored with a
reason (``rejection``). An accepted input is followed by the events the state machine
derives on its own (``advance``; seed 003: ASSEMBLE_PROMPT → INVOKE_LLM → PARSE_RESPONSE
→ DISPATCH_TOOL | FINALIZE_CYCLE → TERMINATE_OR_CONTINUE) until the run waits on
something outside again. The tasks to send are the ones that became pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import OperatorMessageAnalyzed
from contreact_events.catalog.control import RunPaused, RunResumed, SettingsChanged
from contreact_events.catalog.delivery import TaskFailed, TaskRetried
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.run import RunRequested
from contreact_events.config.live_settings import live_config
from contreact_events.config.overrides import Assignment
from contreact_events.core.advance import advance
from contreact_events.core.fold import fold
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.stamper import Stamper
from contreact_events.core.state import AgentState, Phase
from contreact_events.exceptions import ConfigError
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask

Task = LLMTask | MemoryTask | EmbedTask


@dataclass(frozen=True)
class Decision:
    """Events to append (the accepted input first), the state after them, and the
    tasks to send once they are in the log. ``ignored`` says why nothing happens."""

    state: AgentState
    events: tuple[Event, ...] = ()
    tasks: tuple[Task, ...] = ()
    ignored: str | None = None

    @property
    def accepted(self) -> bool:
        return self.ignored is None


def decide(state: AgentState, event: Event, *, max_derived: int = 10_000) -> Decision:
    """Accept or ignore ``event``; if accepted, derive what follows."""
    reason = rejection(state, event)
    if reason is not None:
        return Decision(state=state, ignored=reason)
    waited_on = state.pending_task_id
    open_before = _sent(state)
    events: list[Event] = [event]
    state = fold(state, event)
    stamp = Stamper(event)
    while derived := advance(state, stamp):
        for new in derived:
            state = fold(state, new)
            events.append(new)
        if len(events) > max_derived:  # a bug, never a legitimate run
            raise RuntimeError(f"decide derived more than {max_derived} events")
    # The cycle waits on one task at a time: a new pending id is a new task to send, and
    # a retried one is sent again. Open tasks (that do not hold the cycle) are sent
    # when they are new, retried, or taken over by a fork: compared as sets.
    retried = {e.task_id for e in events if isinstance(e, TaskRetried)}
    resend = state.pending_task_id != waited_on or state.pending_task_id in retried
    fresh = _sent(state) - open_before
    tasks = tuple(
        task
        for task in (pending_tasks(state) if resend or fresh else ())
        if (task.task_id == state.pending_task_id and resend)
        or (task.task_id, task.send, task.deadline) in fresh
    )
    return Decision(state=state, events=tuple(events), tasks=tasks)


def _sent(state: AgentState) -> set[tuple[str, int, Any]]:
    """The open tasks as sent: id, send and deadline (a new one, a retry, a fork's)."""
    if not state.open_tasks or state.config is None:
        return set()
    seconds = timedelta(seconds=state.config.cognition.deadline_s)
    return {(t.task_id, t.sends, t.since + seconds) for t in state.open_tasks}


ANSWERED_IN: dict[str, tuple[Phase, ...]] = {
    "ModelChecked": ("checking",),
    "LLMResponded": ("awaiting_llm", "compacting"),
    "LLMFailed": ("awaiting_llm", "compacting"),
    "ToolCallCompleted": ("tools",),
    "ReflectionEmbedded": ("embedding",),
    "ParagraphsChecked": ("checking_paragraphs",),
    "EmbeddingFailed": ("embedding", "checking_paragraphs"),
    "MemorySeeded": ("seeding",),
    "PersistentMemoryStored": ("tools",),
    "MemoriesRetrieved": ("retrieving",),
}
"""Worker results: the phases in which the run waits for each (on its pending task)."""


def rejection(state: AgentState, event: Event) -> str | None:
    """None if the run waits for this input now; otherwise why it is ignored."""
    if isinstance(event, RunRequested):
        return None if state.phase == "new" else f"run {state.run_id} already exists"
    if isinstance(event, RunForked):
        return _fork_rejection(state, event)
    if state.terminal:
        return f"run {state.run_id} has ended ({state.status})"
    if state.phase == "new":
        return f"run {state.run_id} was never requested"
    match event.type:
        case "RunCancelled":
            return None
        case "SettingsChanged":
            return _settings_rejection(state, event)
        case "RunPaused":
            if state.paused or (state.stepping and isinstance(event, RunPaused) and event.stepping):
                return f"run {state.run_id} is paused already"
            return None
        case "RunResumed":
            step = isinstance(event, RunResumed) and event.step
            if step and not state.stepping:
                return (
                    f"run {state.run_id} is not stepping: step only a run started with "
                    f"`contreact run --step` or paused with `contreact pause {state.run_id} --step`"
                )
            if not step and not (state.paused or state.stepping):
                return f"run {state.run_id} is not paused"
            return None
        case "OperatorMessageAnalyzed":
            task = state.open_task(event.causation_id)
            answer = isinstance(event, OperatorMessageAnalyzed)
            if task is not None and answer and event.task_id == task.task_id:
                return None
            return f"{event.type} answers {event.causation_id}, which is no open analysis"
        case task_result if task_result in ANSWERED_IN:
            if state.phase in ANSWERED_IN[task_result] and (
                state.pending_task_id == event.causation_id
            ):
                return None
            return f"{event.type} answers {event.causation_id}, which is not pending"
        case "OperatorReplied":
            head = state.waiting_for
            if head is not None and head.task_id == event.task_id and head.reply is None:
                return None
            return "the run is not waiting for this operator reply"
        case "TaskFailed":
            return _failure_rejection(state, event)
    return f"{event.type} is not an input event"


def _fork_rejection(state: AgentState, event: RunForked) -> str | None:
    """A fork's first own event comes right after its copied prefix, which ends with the
    parent's ``CycleEnded(at_cycle)`` (a state no run holds between two inputs)."""
    at_end = state.phase == "cycle_end" and state.cycle_number == event.at_cycle
    if at_end and state.seq == event.prefix_len and event.config.run_id == state.run_id:
        return None
    if state.phase == "new":
        return f"run {state.run_id} has no copied prefix for RunForked to follow"
    return f"run {state.run_id} exists: RunForked follows only a copied prefix"


def _settings_rejection(state: AgentState, event: Event) -> str | None:
    """A change applies only if every key may change mid-run and the new values pass
    the config's validation against the configuration in force (``live_config``)."""
    assert isinstance(event, SettingsChanged) and state.config is not None
    assignments = [Assignment(key, new) for key, (_old, new) in event.changes.items()]
    try:
        live_config(state.config, assignments, cycle=state.cycle_number, require_change=False)
    except ConfigError as exc:
        return str(exc)
    return None


def _failure_rejection(state: AgentState, event: TaskFailed) -> str | None:
    """A failure counts only for what the run waits on now, and only for the send that
    is current (a late failure of an earlier send changes nothing)."""
    task = state.open_task(event.task_id)
    sends = task.sends if task is not None else state.task_sends
    if event.send is not None and event.send != sends:
        return f"TaskFailed concerns send {event.send} of {event.task_id}, not the current one"
    if task is not None:
        return None if task.failure is None else f"{event.task_id} has failed already"
    if state.pending_task_id is not None and event.task_id == state.pending_task_id:
        return None
    head = state.waiting_for
    if event.cause == "expired" and head is not None and head.task_id == event.task_id:
        return None
    return f"TaskFailed for {event.task_id}, which the run does not wait on"


__all__ = ["ANSWERED_IN", "Decision", "Task", "decide", "rejection"]
