"""``fold(state, event) -> state``: pure, one branch per event type.

No I/O, no clock, no randomness. An event that does not fit the state raises
``InvalidTransition``; an event of another run raises ``WrongRun``.

This module is the table of branches (``_apply``), the domain: each reads the state and
returns the fields the event changes. ``fold`` and ``fold_all`` are made from it by the
engine in ``folding`` (``projector``), which also gives the branches their fast
constructors (``evolve``, ``trusted``) and ``Appended``.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from contreact_events.catalog.chat import ChatMessage, LLMUsage, ToolCall
from contreact_events.catalog.cognition import (
    MemoriesRetrievalRequested,
    MemoriesRetrieved,
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    PersistentMemoryStored,
)
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.catalog.control import RunPaused, RunResumed, SettingsChanged
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleMetrics,
    CycleStarted,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ReflectionRecorded,
    StepLimitReached,
)
from contreact_events.catalog.delivery import TaskFailed, TaskRetried
from contreact_events.catalog.diversity import (
    EmbeddingFailed,
    EmbeddingRequested,
    ParagraphCheckRequested,
    ParagraphsAccepted,
    ParagraphsChecked,
    ReflectionEmbedded,
    RegenerationRequested,
    SimilarityAssessed,
    TopicExhausted,
)
from contreact_events.catalog.envelope import EventBase
from contreact_events.catalog.fork import MemorySeeded, RunForked
from contreact_events.catalog.run import (
    ModelChecked,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunRequested,
    RunStarted,
    RunStopped,
)
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.config.live_settings import applied
from contreact_events.core.data_tools import (
    added_problem,
    added_tool,
    report_problem,
    split_report,
    used,
)
from contreact_events.core.folding import Appended, evolve, projector, trusted
from contreact_events.core.researcher import researcher_turn
from contreact_events.core.state import (
    AgentState,
    Attempt,
    KeptExchange,
    OpenTask,
    Phase,
    QueuedToolCall,
)
from contreact_events.core.task_ids import (
    analysis_task_id,
    check_task_id,
    fork_task_id,
)
from contreact_events.core.tools import (
    OPERATOR_TOOL,
    WORKER_TOOLS,
    bounded_arguments,
    bounded_output,
    check_arguments,
    size_problem,
)
from contreact_events.exceptions import ConfigError, InvalidTransition

_NO_METRICS = CycleMetrics()
"""A new cycle's metrics (frozen: one instance serves every cycle)."""


def _expect(state: AgentState, event: EventBase, *phases: Phase) -> None:
    if state.phase not in phases:
        kind = type(event).__name__
        raise InvalidTransition(
            f"{kind} {event.event_id} does not fit run {state.run_id} in phase "
            f"'{state.phase}' (expected {' or '.join(phases)})"
        )


@singledispatch
def _apply(event: EventBase, state: AgentState) -> dict[str, Any]:
    raise InvalidTransition(f"no fold branch for {type(event).__name__}")


fold, fold_all = projector(_apply)
"""``fold(state, event) -> state``, and ``fold_all(events, state=None) -> state`` (a whole
log into one draft): see ``folding.projector``."""


@_apply.register
def _(event: RunRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "new")
    return {
        "status": "checking",
        "phase": "checking",
        "config": event.config,
        "pending_task_id": check_task_id(state.run_id),
        "code_version": event.orchestrator_version,
        "stepping": event.stepping,
    }


@_apply.register
def _(event: ModelChecked, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "checking")
    if not event.ok:
        return {"phase": "failing", "pending_task_id": None, "failure_reason": event.detail}
    return {
        "phase": "starting",
        "pending_task_id": None,
        "backend": event.backend,
        "model_digest": event.model_digest,
        "resolved_model": event.model,
    }


@_apply.register
def _(event: RunStarted, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "starting")
    return {
        "status": "running",
        # A fork starts after its copied cycles: the next cycle, or the end, comes next
        # (and the advisory the last copied cycle earned goes with it, unless the
        # fork's diversity check is off: see RunForked).
        "phase": "cycle_end" if state.cycle_number > 0 else "cycle_start",
        "config": event.config,
        "backend": event.backend,
        "system_prompt": event.system_prompt,
        "tools": event.tools,
        "started_at": event.ts,
        "spent_tokens": 0,
        "spent_cost": 0.0,
        "uncosted_calls": 0,
    }


@_apply.register
def _(event: RunForked, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "cycle_end")
    if event.at_cycle != state.cycle_number or event.prefix_len != state.seq:
        raise InvalidTransition(
            f"RunForked {event.event_id} forks at cycle {event.at_cycle} after "
            f"{event.prefix_len} events, but the log holds {state.seq} events ending "
            f"cycle {state.cycle_number}"
        )
    seeding = event.memory_calls > 0
    task = fork_task_id(state.run_id, event.at_cycle, "seed" if seeding else "check")
    changes: dict[str, Any] = {
        "status": "checking",
        "phase": "seeding" if seeding else "checking",
        "config": event.config,
        "pending_task_id": task,
        "code_version": event.orchestrator_version,
        "fork_prefix": event.prefix_len,
        # A fork starts running, whatever its parent's researcher did with the parent.
        "paused": False,
        "stepping": False,
        "step_grants": 0,
        # The prefix's open analyses are the child's: sent again from now.
        "open_tasks": tuple(
            evolve(t, {"since": event.ts, "sends": 1, "failure": None}) for t in state.open_tasks
        ),
    }
    # The child's config is in force from cycle K+1: what the parent's config made and
    # the child's turns off does not carry over (cycle K's memory block into the next
    # prompts and the heuristic analyses; cycle K's advisory into cycle K+1). A fork
    # recorded before that (RunForked 1) kept both, and replays so.
    config = event.config
    if event.config_in_force and not config.cognition.memory_block and state.memory_block:
        changes["memory_block"] = ()
    if event.config_in_force and not config.diversity.enabled and state.next_advisory:
        changes["next_advisory"] = None
    if event.question:
        changes["researcher_question"] = event.question
    return changes


@_apply.register
def _(event: MemorySeeded, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "seeding")
    if not event.ok:
        reason = f"the fork's memory seed failed: {event.detail}"
        return {"phase": "failing", "pending_task_id": None, "failure_reason": reason}
    check = fork_task_id(state.run_id, state.cycle_number, "check")
    return {"phase": "checking", "pending_task_id": check}


@_apply.register
def _(event: CycleStarted, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "cycle_start", "cycle_end")
    if event.cycle != state.cycle_number + 1:
        raise InvalidTransition(f"cycle {event.cycle} started after cycle {state.cycle_number}")
    opened: list[ChatMessage] = []
    opening = state.config.cycle_start_message if state.config else ""
    if opening:
        text = opening.replace("{cycle}", str(event.cycle))
        opened.append(trusted(ChatMessage, role="user", content=text))
    changes: dict[str, Any] = {}
    if state.researcher_question:  # a fork's question (``contreact ask``) opens this cycle
        content = researcher_turn(state.researcher_question)
        opened.append(trusted(ChatMessage, role="user", content=content))
        changes["researcher_question"] = ""
    return {
        **changes,
        "phase": "calling",
        "cycle_number": event.cycle,
        "step": 0,
        "advisory": event.advisory,
        "next_advisory": None,
        "attempts": (),
        "message_history": Appended(*opened),
        "metrics": _NO_METRICS,
        "final_call": False,
    }


@_apply.register
def _(event: LLMRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "calling")
    changes: dict[str, Any] = {
        "phase": "awaiting_llm",
        "pending_task_id": event.task_id,
        "step": state.step + 1,
        "llm_calls": state.llm_calls + 1,
    }
    if state.stepping:  # ``contreact step``: one grant, one model call
        changes["step_grants"] = max(state.step_grants - 1, 0)
    return changes


@_apply.register
def _(event: HistoryCompactionRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "cycle_start", "cycle_end")
    return {
        "phase": "compacting",
        "pending_task_id": event.task_id,
        "compaction_upto": event.upto,
        "compacting_from": state.phase,
    }


@_apply.register
def _(event: LLMResponded, state: AgentState) -> dict[str, Any]:
    if state.phase == "compacting":  # the summary: it stands for the older part from now
        changes: dict[str, Any] = {
            "phase": state.compacting_from,
            "pending_task_id": None,
            "summary": event.message.content,
            "summary_upto": state.compaction_upto,
            "compactions": state.compactions + 1,
            "host": event.host or state.host,
        }
        if state.cycle_metrics:  # its tokens and time count to the cycle it follows
            last = state.cycle_metrics[-1]
            usage = event.usage
            counted = evolve(
                last,
                {
                    "prompt_tokens": last.prompt_tokens + usage.prompt_tokens,
                    "completion_tokens": last.completion_tokens + usage.completion_tokens,
                    "llm_seconds": last.llm_seconds + usage.wall_s,
                },
            )
            changes["cycle_metrics"] = (*state.cycle_metrics[:-1], counted)
        return changes
    _expect(state, event, "awaiting_llm")
    message = event.message
    m = state.metrics
    metrics = evolve(
        m,
        {
            "llm_calls": m.llm_calls + 1,
            "response_chars": m.response_chars + len(message.content),
            "prompt_tokens": m.prompt_tokens + event.usage.prompt_tokens,
            "completion_tokens": m.completion_tokens + event.usage.completion_tokens,
            "llm_seconds": m.llm_seconds + event.usage.wall_s,
        },
    )
    reply = trusted(
        ChatMessage,
        role="assistant",
        content=message.content,
        tool_calls=_calls_for_history(state, message.tool_calls),
        thinking=message.thinking,
    )
    return {
        "phase": "responded",
        "host": event.host or state.host,
        "pending_task_id": None,
        "last_response": message,
        "message_history": Appended(reply),
        "metrics": metrics,
        "last_prompt_tokens": event.usage.prompt_tokens,
        **_spent(state, event.usage),
    }


def _spent(state: AgentState, usage: LLMUsage | None) -> dict[str, Any]:
    """The run's spend with one more call's (an agent's, or an exchange's analysis):
    its tokens, its cost when known, else one more call of unknown cost. None: no call."""
    if usage is None:
        return {}
    return {
        "spent_tokens": state.spent_tokens + usage.prompt_tokens + usage.completion_tokens,
        "spent_cost": state.spent_cost + (usage.cost or 0.0),
        "uncosted_calls": state.uncosted_calls + (usage.cost is None),
    }


@_apply.register
def _(event: LLMFailed, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "awaiting_llm", "compacting")
    reason = f"LLM call failed after {event.attempts} attempt(s): {event.error}"
    return {"phase": "failing", "pending_task_id": None, "failure_reason": reason}


@_apply.register
def _(event: ToolCallRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "responded", "tools")
    problem = event.arguments_error and (
        f"Error: the arguments of {event.tool_name} could not be read: {event.arguments_error}"
    )
    offered = _offered(state.tools)
    report = state.config.tools.self_report if state.config is not None else None
    arguments, _ = split_report(event.arguments, report, event.tool_name)
    added = added_tool(state.config, event.tool_name) if event.tool_name in offered else None
    if added is not None:
        problem = problem or added_problem(added, arguments)
    else:
        problem = problem or check_arguments(event.tool_name, arguments, offered)
    if problem is None and event.tool_name in offered:
        problem = report_problem(event.tool_name, event.arguments, report)
    problem = problem or _size_problem(state, event)
    call = trusted(
        QueuedToolCall,
        task_id=event.task_id,
        cycle=event.cycle,
        step=event.step,
        index=event.index,
        tool_name=event.tool_name,
        arguments=arguments,
        problem=problem,
        requested_at=event.ts,
    )
    m = state.metrics
    update: dict[str, Any] = {"tool_calls": m.tool_calls + 1}
    if event.tool_name in WORKER_TOOLS:
        update["memory_ops_total"] = m.memory_ops_total + 1
        if event.tool_name == "write" and problem is None:
            update["memory_write_chars"] = m.memory_write_chars + len(event.arguments["value"])
    elif event.tool_name == OPERATOR_TOOL:
        update["messages_to_operator"] = m.messages_to_operator + 1
    pending = state.pending_task_id
    if not state.tool_queue and problem is None and event.tool_name in WORKER_TOOLS:
        pending = event.task_id
    return {
        "phase": "tools",
        "tool_queue": Appended(call),
        "metrics": evolve(m, update),
        "pending_task_id": pending,
    }


@_apply.register
def _(event: OperatorMessageSent, state: AgentState) -> dict[str, Any]:
    head = _head(state, event, event.task_id)
    waiting = state.config is not None and state.config.operator.mode == "human"
    changes: dict[str, Any] = {
        "tool_queue": (evolve(head, {"message_sent": True}), *state.tool_queue[1:]),
        "status": "waiting_operator" if waiting else state.status,
    }
    if waiting:  # the operator's deadline (operator.timeout_s) counts from here
        changes["pending_since"] = event.ts
    return changes


@_apply.register
def _(event: OperatorReplied, state: AgentState) -> dict[str, Any]:
    head = _head(state, event, event.task_id)
    if not head.message_sent or head.reply is not None:
        raise InvalidTransition(f"operator reply {event.event_id} without a message waiting")
    return {
        "tool_queue": (
            evolve(head, {"reply": event.text, "replied_by": event.by}),
            *state.tool_queue[1:],
        ),
        "status": "running",
        "pending_since": None,
    }


@_apply.register
def _(event: ToolCallCompleted, state: AgentState) -> dict[str, Any]:
    head = _head(state, event, event.task_id)
    rest = state.tool_queue[1:]
    cap = state.config.limits.tool_output_chars if state.config and event.ok else None
    output = bounded_output(event.output, cap)  # errors are short and must stay whole
    result = trusted(ChatMessage, role="tool", content=output, tool_name=event.tool_name)
    m = state.metrics
    metrics = m if event.ok else evolve(m, {"tool_errors": m.tool_errors + 1})
    pending = None
    if rest and rest[0].problem is None and rest[0].tool_name in WORKER_TOOLS:
        pending = rest[0].task_id
    changes: dict[str, Any] = {
        "tool_queue": rest,
        "phase": "tools" if rest else "calling",
        "message_history": Appended(result),
        "metrics": metrics,
        "pending_task_id": pending,
    }
    if head.problem is None and added_tool(state.config, event.tool_name) is not None:
        changes["tool_uses"] = used(state.tool_uses, event.tool_name)
    return changes


@_apply.register
def _(event: StepLimitReached, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "responded")
    note = (
        f"Not executed: the limit of {event.steps} steps per cycle was reached, "
        "so this cycle ends here."
    )
    if event.final_call:
        note = final_call_note(event.steps)
    calls = state.last_response.tool_calls if state.last_response else ()
    skipped = (trusted(ChatMessage, role="tool", content=note, tool_name=c.name) for c in calls)
    history = Appended(*skipped)
    if event.final_call:
        return {"message_history": history, "phase": "calling", "final_call": True}
    return {"message_history": history}


def final_call_note(steps: int) -> str:
    """What each dropped tool call answers when the model gets a last call without tools."""
    return (
        f"Not executed: the limit of {steps} steps per cycle was reached. Tools are off "
        "now: answer without calling a tool; your answer ends this cycle."
    )


@_apply.register
def _(event: ParagraphCheckRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "responded")
    return {"phase": "checking_paragraphs", "pending_task_id": event.task_id}


@_apply.register
def _(event: ParagraphsChecked, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "checking_paragraphs")
    text = state.last_response.content if state.last_response else ""
    attempt = Attempt(
        attempt=event.attempt,
        text=text,
        similarity=event.overall_similarity,
        is_unique=event.is_unique,
        feedback=event.feedback,
    )
    return {
        "phase": "paragraphs_checked",
        "pending_task_id": None,
        "attempts": Appended(attempt),
    }


@_apply.register
def _(event: RegenerationRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "paragraphs_checked")
    history = state.message_history
    if history and history[-1].role == "assistant":
        history = history[:-1]  # the rejected answer stays in the log, not in the prompt
    m = state.metrics
    return {
        "phase": "calling",
        "message_history": history,
        "last_response": None,
        "regeneration_feedback": event.feedback,
        "regeneration_at": len(history) if event.pinned else None,
        "metrics": evolve(m, {"regenerations": m.regenerations + 1}),
    }


@_apply.register
def _(event: TopicExhausted, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "paragraphs_checked")
    return {}


@_apply.register
def _(event: ParagraphsAccepted, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "reflected")
    accepted = state.reflection_history[-1]
    history = state.message_history
    if history and history[-1].role == "assistant" and history[-1].content != accepted:
        # An earlier, better attempt was accepted: it is what the agent said.
        history = (*history[:-1], evolve(history[-1], {"content": accepted, "tool_calls": ()}))
    return {"message_history": history}


@_apply.register
def _(event: ReflectionRecorded, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "responded", "paragraphs_checked")
    metrics = evolve(state.metrics, {"reflection_chars": len(event.text)})
    return {
        "phase": "reflected",
        "regeneration_feedback": None,
        "regeneration_at": None,
        "reflection_history": Appended(event.text),
        "reflection_complete": event.complete,
        "metrics": metrics,
    }


@_apply.register
def _(event: EmbeddingRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "reflected")
    return {"phase": "embedding", "pending_task_id": event.task_id}


@_apply.register
def _(event: ReflectionEmbedded, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "embedding")
    return {
        "phase": "assessing",
        "pending_task_id": None,
        "embeddings": Appended((event.cycle, event.vector)),
    }


@_apply.register
def _(event: EmbeddingFailed, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "embedding", "checking_paragraphs")
    if state.phase == "embedding":
        return {"phase": "closing", "pending_task_id": None}
    text = state.last_response.content if state.last_response else ""
    unchecked = Attempt(
        attempt=len(state.attempts) + 1,
        text=text,
        similarity=0.0,
        is_unique=True,
        feedback=event.error,
        checked=False,
    )
    return {
        "phase": "paragraphs_checked",
        "pending_task_id": None,
        "attempts": Appended(unchecked),
    }


@_apply.register
def _(event: SimilarityAssessed, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "reflected", "assessing")
    return {"phase": "closing", "next_advisory": event.advisory}


@_apply.register
def _(event: CycleEnded, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "reflected", "closing")
    return {
        "phase": "cycle_end",
        "last_response": None,
        "advisory": None,
        "cycle_metrics": Appended(event.metrics),
    }


@_apply.register
def _(event: RunCompleted, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "cycle_end")
    if state.open_tasks:
        raise InvalidTransition(
            f"RunCompleted {event.event_id} while {len(state.open_tasks)} task(s) are open"
        )
    return {"status": "completed", "phase": "done"}


@_apply.register
def _(event: RunFailed, state: AgentState) -> dict[str, Any]:
    if state.terminal:
        raise InvalidTransition(f"RunFailed {event.event_id} after the run ended")
    return {
        "status": "failed",
        "phase": "done",
        "failure_reason": event.reason,
        "pending_task_id": None,
        "open_tasks": (),
    }


@_apply.register
def _(event: RunStopped, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "calling")
    return {
        "status": "stopped",
        "phase": "done",
        "stop_reason": f"{event.reason}: {event.detail}",
        "pending_task_id": None,
        "open_tasks": (),
    }


@_apply.register
def _(event: RunCancelled, state: AgentState) -> dict[str, Any]:
    if state.terminal or state.phase == "new":
        raise InvalidTransition(f"RunCancelled {event.event_id} for a run that is not active")
    return {
        "status": "cancelled",
        "phase": "done",
        "failure_reason": event.reason,
        "pending_task_id": None,
        "tool_queue": (),
        "open_tasks": (),
    }


@_apply.register
def _(event: SettingsChanged, state: AgentState) -> dict[str, Any]:
    if state.terminal or state.phase == "new" or state.config is None:
        raise InvalidTransition(f"SettingsChanged {event.event_id} for a run that is not active")
    try:  # the new values are in force from the run's next decision on
        return {"config": applied(state.config, event.changes)}
    except ConfigError as exc:
        raise InvalidTransition(f"SettingsChanged {event.event_id}: {exc}") from None


@_apply.register
def _(event: RunPaused, state: AgentState) -> dict[str, Any]:
    if state.terminal or state.phase == "new":
        raise InvalidTransition(f"RunPaused {event.event_id} for a run that is not active")
    return {"paused": not event.stepping, "stepping": event.stepping, "step_grants": 0}


@_apply.register
def _(event: RunResumed, state: AgentState) -> dict[str, Any]:
    if state.terminal or state.phase == "new":
        raise InvalidTransition(f"RunResumed {event.event_id} for a run that is not active")
    if event.step:
        return {"paused": False, "step_grants": state.step_grants + 1}
    return {"paused": False, "stepping": False, "step_grants": 0}


WAITING_PHASES: tuple[Phase, ...] = (
    "seeding",
    "retrieving",
    "checking",
    "awaiting_llm",
    "tools",
    "embedding",
    "checking_paragraphs",
)
"""Phases in which the run waits on something outside (a task, or the operator)."""


@_apply.register
def _(event: TaskFailed, state: AgentState) -> dict[str, Any]:
    if state.open_task(event.task_id) is not None:
        failure = f"{event.cause}: {event.reason}"
        return {"open_tasks": _with_open(state, event.task_id, failure=failure)}
    _expect(state, event, *WAITING_PHASES)
    return {"task_failure": f"{event.cause}: {event.reason}"}


@_apply.register
def _(event: TaskRetried, state: AgentState) -> dict[str, Any]:
    if state.open_task(event.task_id) is not None:
        retried = {"sends": event.send, "since": event.ts, "failure": None}
        return {"open_tasks": _with_open(state, event.task_id, **retried)}
    _expect(state, event, *WAITING_PHASES)
    if event.task_id != state.pending_task_id:
        raise InvalidTransition(
            f"TaskRetried {event.event_id} retries {event.task_id}, "
            f"but the run waits on {state.pending_task_id}"
        )
    return {"task_sends": event.send, "pending_since": event.ts}


@_apply.register
def _(event: OperatorMessageAnalysisRequested, state: AgentState) -> dict[str, Any]:
    head = _head(state, event, event.exchange_task_id)
    if head.tool_name != OPERATOR_TOOL or head.reply is None or head.analysed:
        raise InvalidTransition(
            f"OperatorMessageAnalysisRequested {event.event_id}: tool call "
            f"{head.task_id} is no answered, unanalysed operator exchange"
        )
    changes: dict[str, Any] = {
        "tool_queue": (evolve(head, {"analysed": True}), *state.tool_queue[1:]),
        "exchanges": (*state.exchanges, event.exchange),
    }
    if event.analyser == "model":
        task = OpenTask(
            task_id=event.task_id,
            cycle=event.cycle,
            exchange=event.exchange,
            recent=event.recent,
            memories=state.memory_block,
            since=event.ts,
        )
        changes["open_tasks"] = (*state.open_tasks, task)
    return changes


@_apply.register
def _(event: OperatorMessageAnalyzed, state: AgentState) -> dict[str, Any]:
    changes: dict[str, Any] = {"analyses": state.analyses + 1, **_spent(state, event.usage)}
    _policy_sees(state, event, changes)
    if state.open_task(event.task_id) is not None:
        changes["open_tasks"] = tuple(t for t in state.open_tasks if t.task_id != event.task_id)
        return changes
    heuristic = state.config is not None and state.config.cognition.analysis == "heuristic"
    head = state.tool_queue[0] if state.tool_queue else None
    unanswered = head is not None and head.replied_by == "timeout"  # the core's own analysis
    if not (heuristic or unanswered) or state.phase != "tools":
        raise InvalidTransition(
            f"OperatorMessageAnalyzed {event.event_id} answers {event.task_id}, "
            "which is no open analysis"
        )
    return changes


def _policy_sees(
    state: AgentState, event: OperatorMessageAnalyzed, changes: dict[str, Any]
) -> None:
    """The memory policy (``cognition.memory_policy``) holds the cycle on the exchange
    being analysed: its analysis is kept on the call until the policy has acted."""
    head = state.tool_queue[0] if state.tool_queue else None
    policy = state.config is not None and state.config.cognition.memory_policy
    if policy and head is not None and analysis_task_id(head.task_id) == event.task_id:
        changes["tool_queue"] = (evolve(head, {"analysis": event.analysis}), *state.tool_queue[1:])


@_apply.register
def _(event: PersistentMemoryRequested, state: AgentState) -> dict[str, Any]:
    head = _head(state, event, event.exchange_task_id)
    if head.analysis is None or head.kept is not None:
        raise InvalidTransition(
            f"PersistentMemoryRequested {event.event_id}: the exchange of {head.task_id} "
            "has no analysis, or was kept already"
        )
    kept = KeptExchange(
        task_id=event.task_id, key=event.key, value=event.value, requested_at=event.ts
    )
    return {
        "tool_queue": (evolve(head, {"kept": kept}), *state.tool_queue[1:]),
        "pending_task_id": event.task_id,
    }


@_apply.register
def _(event: PersistentMemoryStored, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "tools")
    head = state.tool_queue[0]
    if head.kept is None or head.kept.task_id != event.task_id or head.kept.stored:
        raise InvalidTransition(
            f"PersistentMemoryStored {event.event_id} answers {event.task_id}, "
            "which is no store the run waits on"
        )
    kept = evolve(head.kept, {"stored": True})
    return {
        "tool_queue": (evolve(head, {"kept": kept}), *state.tool_queue[1:]),
        "pending_task_id": None,
    }


@_apply.register
def _(event: MemoriesRetrievalRequested, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "cycle_start", "cycle_end")
    if event.cycle != state.cycle_number + 1:
        raise InvalidTransition(
            f"MemoriesRetrievalRequested {event.event_id} is for cycle {event.cycle}, "
            f"but cycle {state.cycle_number + 1} comes next"
        )
    return {"phase": "retrieving", "pending_task_id": event.task_id}


@_apply.register
def _(event: MemoriesRetrieved, state: AgentState) -> dict[str, Any]:
    _expect(state, event, "retrieving")
    # Back to where the next cycle starts from (its advisory is kept in next_advisory).
    return {
        "phase": "cycle_end",
        "pending_task_id": None,
        "memory_block": event.memories,
        "retrieved_for": event.cycle,
    }


def _with_open(state: AgentState, task_id: str, **changes: Any) -> tuple[OpenTask, ...]:
    return tuple(evolve(t, changes) if t.task_id == task_id else t for t in state.open_tasks)


def _size_problem(state: AgentState, event: ToolCallRequested) -> str | None:
    if state.config is None:
        return None
    limits = state.config.limits
    return size_problem(
        event.tool_name,
        event.arguments,
        value_chars=limits.memory_value_chars,
        argument_chars=limits.tool_argument_chars,
    )


def _calls_for_history(state: AgentState, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """The tool calls as the conversation keeps them: arguments over their cap cut
    (``limits.cut_arguments_in_history``), so a refused 1 MB ``write`` is not sent
    back in every later call. ``last_response`` and the log keep the calls whole."""
    limits = state.config.limits if state.config else None
    if not calls or limits is None or not limits.cut_arguments_in_history:
        return calls
    kept = []
    for call in calls:
        arguments = bounded_arguments(
            call.name,
            call.arguments,
            value_chars=limits.memory_value_chars,
            argument_chars=limits.tool_argument_chars,
        )
        kept.append(call if arguments is call.arguments else evolve(call, {"arguments": arguments}))
    return tuple(kept)


_offered_cache: tuple[tuple[dict[str, Any], ...], tuple[str, ...]] = ((), ())


def _offered(tools: tuple[dict[str, Any], ...]) -> tuple[str, ...]:
    """The names of the run's tools (``RunStarted.tools``), kept for the last tuple
    seen: every tool call of a run asks for the same."""
    global _offered_cache
    seen, names = _offered_cache
    if tools is not seen:
        names = tuple(str(tool["function"]["name"]) for tool in tools)
        _offered_cache = (tools, names)
    return names


def _head(state: AgentState, event: EventBase, task_id: str) -> QueuedToolCall:
    _expect(state, event, "tools")
    head = state.tool_queue[0]
    if head.task_id != task_id:
        raise InvalidTransition(
            f"{type(event).__name__} {event.event_id} answers {task_id}, "
            f"but the run is on tool call {head.task_id}"
        )
    return head
