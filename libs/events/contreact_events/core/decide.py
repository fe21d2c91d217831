"""``decide(state, event) -> Decision``: what the orchestrator does with one input.

Pure. An input event (a worker result or a CLI command) is accepted only when the
run waits for exactly it; a duplicate, stale or out-of-order input is ignored with a
reason. An accepted input is followed by the events the state machine derives on
its own (seed 003: ASSEMBLE_PROMPT → INVOKE_LLM → PARSE_RESPONSE → DISPATCH_TOOL |
FINALIZE_CYCLE → TERMINATE_OR_CONTINUE) until the run waits on something outside
again. The tasks to send are the ones that became pending.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import (
    MemoriesRetrievalRequested,
    MemoriesRetrieved,
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    RetrievedMemory,
)
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
    LLMRequested,
    ReflectionRecorded,
    StepLimitReached,
)
from contreact_events.catalog.delivery import TaskFailed, TaskRetried
from contreact_events.catalog.diversity import (
    EmbeddingFailed,
    EmbeddingRequested,
    ParagraphCheckRequested,
    ParagraphsAccepted,
    RegenerationRequested,
    SimilarityAssessed,
    TopicExhausted,
)
from contreact_events.catalog.envelope import EventBase
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.run import RunCompleted, RunFailed, RunRequested, RunStarted
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.cognition.analysis import Exchange
from contreact_events.cognition.heuristic import analyse_heuristically
from contreact_events.cognition.policy import conversation_unit, keeps, kept_key
from contreact_events.cognition.retrieval import Candidate
from contreact_events.cognition.unanswered import analyse_unanswered
from contreact_events.config import RunConfig
from contreact_events.core.fold import (
    analysis_task_id,
    embed_task_id,
    final_call_note,
    fold,
    llm_task_id,
    paragraph_task_id,
    persist_task_id,
    retrieval_task_id,
    tool_task_id,
)
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.prompt import prompt_sha256, retrieval_query
from contreact_events.core.state import AgentState, Attempt, OpenTask, Phase
from contreact_events.core.tools import (
    OPERATOR_TOOL,
    TOOLS_PARAGRAPH,
    offered_tools,
    system_prompt_with_tools,
    tool_schemas,
)
from contreact_events.diversity.corpus import scope_for
from contreact_events.diversity.paragraphs import augment_prompt_with_feedback, split_paragraphs
from contreact_events.diversity.similarity import HIGH_ADVISORY, MODERATE_ADVISORY, assess
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask

Task = LLMTask | MemoryTask | EmbedTask

REGENERATE_REQUEST = "Write your answer for this cycle again."
"""What the feedback of seed 001 is put before when an answer is asked for again."""


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
    stamp = _Stamper(event)
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
    "LLMResponded": ("awaiting_llm",),
    "LLMFailed": ("awaiting_llm",),
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


def advance(state: AgentState, stamp: _Stamper) -> list[Event]:
    """The events that follow from ``state`` alone; empty when the run must wait."""
    config = state.config
    if config is None:
        return []
    if state.task_failure is not None:
        return [_after_task_failure(state, config, stamp)]
    failed = next((t for t in state.open_tasks if t.failure is not None), None)
    if failed is not None:
        return [_after_open_failure(state, failed, config, stamp)]
    match state.phase:
        case "starting":
            offered = offered_tools(config.tools.search_memory)
            prompt = system_prompt_with_tools(config.system_prompt, offered)
            tools = tool_schemas(offered)
            return [
                stamp(
                    RunStarted,
                    config=config.model_copy(update={"backend": state.backend}),
                    backend=state.backend,
                    model=state.resolved_model or config.model_name,
                    model_digest=state.model_digest,
                    seed=config.model_options.seed,
                    system_prompt=prompt,
                    system_prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
                    tools=tools,
                    code_version=state.code_version,
                    prompt_hashes=prompt_hashes(config, prompt),
                )
            ]
        case "cycle_start":
            if _retrieves(state, config):
                return [_retrieval(state, config, stamp)]
            return [stamp(CycleStarted, cycle=state.cycle_number + 1, advisory=None)]
        case "calling":
            step = state.step + 1
            return [
                stamp(
                    LLMRequested,
                    task_id=llm_task_id(state.run_id, state.cycle_number, step),
                    cycle=state.cycle_number,
                    step=step,
                    call_index=state.llm_calls,
                    prompt_sha256=prompt_sha256(state),
                )
            ]
        case "responded":
            return _after_response(state, stamp)
        case "tools":
            return _next_tool_step(state, stamp)
        case "paragraphs_checked":
            return _after_paragraph_check(state, stamp)
        case "reflected":
            return [_after_reflection(state, stamp)]
        case "assessing":
            return [_assessment(state, stamp)]
        case "closing":
            return [_cycle_ended(state, stamp)]
        case "cycle_end":
            if state.cycle_number >= config.cycle_count:
                if state.open_tasks:  # each has a deadline: the wait is bounded
                    return []
                return [stamp(RunCompleted, cycles=state.cycle_number)]
            if _retrieves(state, config):
                return [_retrieval(state, config, stamp)]
            return [stamp(CycleStarted, cycle=state.cycle_number + 1, advisory=state.next_advisory)]
        case "failing":
            return [stamp(RunFailed, reason=state.failure_reason or "unknown failure")]
    return []


def _retrieves(state: AgentState, config: RunConfig) -> bool:
    """``cognition.memory_block``: the next cycle's memories are not retrieved yet."""
    return config.cognition.memory_block and state.retrieved_for <= state.cycle_number


def _retrieval(state: AgentState, config: RunConfig, stamp: _Stamper) -> Event:
    cycle = state.cycle_number + 1
    return stamp(
        MemoriesRetrievalRequested,
        task_id=retrieval_task_id(state.run_id, cycle),
        cycle=cycle,
        query=retrieval_query(state),
        k=config.cognition.memory_block_k,
    )


def _after_response(state: AgentState, stamp: _Stamper) -> list[Event]:
    assert state.config is not None and state.last_response is not None
    response = state.last_response
    cycle = state.cycle_number
    if not response.tool_calls:
        diversity = state.config.diversity
        guarded = diversity.enabled and diversity.mode == "regenerate"
        if guarded and split_paragraphs(response.content, diversity.paragraph_min_length):
            attempt = len(state.attempts) + 1
            return [
                stamp(
                    ParagraphCheckRequested,
                    task_id=paragraph_task_id(state.run_id, cycle, attempt),
                    cycle=cycle,
                    attempt=attempt,
                    scope=scope_for(state.config, state.run_id),
                )
            ]
        return [stamp(ReflectionRecorded, cycle=cycle, text=response.content)]
    if state.step >= state.config.max_steps_per_cycle:
        if state.config.final_call_at_step_cap and not state.final_call:
            return [_final_call(state, stamp)]
        return [
            stamp(
                StepLimitReached,
                cycle=cycle,
                steps=state.step,
                dropped_tool_calls=len(response.tool_calls),
            ),
            stamp(ReflectionRecorded, cycle=cycle, text=response.content, complete=False),
        ]
    return [
        stamp(
            ToolCallRequested,
            task_id=tool_task_id(state.run_id, cycle, state.step, i),
            cycle=cycle,
            step=state.step,
            index=i,
            tool_name=call.name,
            arguments=call.arguments,
            arguments_error=call.arguments_error,
        )
        for i, call in enumerate(response.tool_calls)
    ]


def _final_call(state: AgentState, stamp: _Stamper) -> Event:
    """The step cap with tools still called: one more call, without tools, so the
    cycle ends with a reflection the model wrote as such."""
    assert state.last_response is not None
    return stamp(
        StepLimitReached,
        cycle=state.cycle_number,
        steps=state.step,
        dropped_tool_calls=len(state.last_response.tool_calls),
        final_call=True,
    )


def _after_paragraph_check(state: AgentState, stamp: _Stamper) -> list[Event]:
    """Seed 001: accept a unique attempt; otherwise ask again with the feedback, up to
    ``max_attempts``; then accept the best one, under the relaxed threshold or, past
    it, with a topic-exhaustion event. Never an endless loop."""
    assert state.config is not None
    diversity = state.config.diversity
    cycle = state.cycle_number
    last = state.attempts[-1]
    if last.is_unique:
        return _accept(state, stamp, last, relaxed=False)
    if last.attempt < diversity.max_attempts:
        feedback = augment_prompt_with_feedback(REGENERATE_REQUEST, last.feedback)
        return [
            stamp(
                RegenerationRequested,
                cycle=cycle,
                attempt=last.attempt + 1,
                feedback=feedback,
                pinned=diversity.feedback_placement == "pinned",
            )
        ]
    best = min(state.attempts, key=lambda a: (a.similarity, a.attempt))
    exhausted: list[Event] = []
    if best.similarity >= diversity.relaxed_threshold:
        exhausted.append(
            stamp(
                TopicExhausted,
                cycle=cycle,
                attempts=len(state.attempts),
                best_attempt=best.attempt,
                best_similarity=best.similarity,
            )
        )
    return exhausted + _accept(state, stamp, best, relaxed=True)


def _accept(state: AgentState, stamp: _Stamper, attempt: Attempt, *, relaxed: bool) -> list[Event]:
    """The attempt becomes the reflection; its paragraphs join the corpus (unless the
    embedder could not check it: then there are no vectors to add)."""
    assert state.config is not None
    events = [stamp(ReflectionRecorded, cycle=state.cycle_number, text=attempt.text)]
    if attempt.checked:
        events.append(
            stamp(
                ParagraphsAccepted,
                cycle=state.cycle_number,
                attempt=attempt.attempt,
                scope=scope_for(state.config, state.run_id),
                similarity=attempt.similarity,
                relaxed=relaxed,
            )
        )
    return events


def _after_reflection(state: AgentState, stamp: _Stamper) -> Event:
    """FINALIZE_CYCLE: embed the reflection when the diversity check is on."""
    assert state.config is not None
    if not state.config.diversity.enabled:
        return _cycle_ended(state, stamp)
    cycle = state.cycle_number
    if not state.reflection_history[-1].strip():
        return stamp(
            SimilarityAssessed,
            cycle=cycle,
            max_similarity=None,
            most_similar_cycle=None,
            level="none",
            advisory=None,
            note="empty reflection: nothing to embed or compare",
        )
    return stamp(EmbeddingRequested, task_id=embed_task_id(state.run_id, cycle), cycle=cycle)


def _assessment(state: AgentState, stamp: _Stamper) -> Event:
    assert state.config is not None
    (cycle, vector), earlier = state.embeddings[-1], state.embeddings[:-1]
    result = assess(vector, earlier, state.config.diversity)
    return stamp(
        SimilarityAssessed,
        cycle=cycle,
        max_similarity=result.max_similarity,
        most_similar_cycle=result.most_similar_cycle,
        level=result.level,
        advisory=result.advisory,
    )


def _cycle_ended(state: AgentState, stamp: _Stamper) -> Event:
    return stamp(
        CycleEnded,
        cycle=state.cycle_number,
        ended_by="reflection"
        if state.reflection_complete and not state.final_call
        else "step_limit",
        metrics=state.metrics,
    )


def _next_tool_step(state: AgentState, stamp: _Stamper) -> list[Event]:
    assert state.config is not None
    head = state.tool_queue[0]
    done = {"task_id": head.task_id, "tool_name": head.tool_name, "causation_id": head.task_id}
    if head.problem is not None:
        return [stamp(ToolCallCompleted, output=head.problem, ok=False, **done)]
    if head.tool_name != OPERATOR_TOOL:
        return []  # a memory tool: the memory service answers
    if not head.message_sent:
        return [
            stamp(
                OperatorMessageSent,
                task_id=head.task_id,
                cycle=head.cycle,
                message=head.arguments["message"],
            )
        ]
    if head.reply is None:
        operator = state.config.operator
        if operator.mode == "human":
            return []
        return [stamp(OperatorReplied, task_id=head.task_id, text=operator.auto_reply, by="policy")]
    analyser = state.config.cognition.analysis
    if analyser != "off" and not head.analysed:
        return _analysis(state, stamp, analyser, head.task_id, head.cycle)
    if state.config.cognition.memory_policy:
        kept = _memory_policy(state, stamp)
        if kept is not None:
            return kept
    return [stamp(ToolCallCompleted, output=head.reply, ok=True, **done)]


def _memory_policy(state: AgentState, stamp: _Stamper) -> list[Event] | None:
    """Seed 002's persistent memory: the reply goes back to the model only once the
    exchange's analysis is in (a model's: the run waits for its open task) and, when it
    scores above the threshold, once the exchange is stored under the reserved prefix.
    None: the policy is done with this exchange."""
    assert state.config is not None
    head = state.tool_queue[0]
    if head.analysis is None:
        return []  # the open analysis task is awaited (its deadline bounds the wait)
    threshold = state.config.cognition.persistence_threshold
    if head.kept is None and keeps(head.analysis, threshold):
        exchange = Exchange(
            agent_message=head.arguments["message"], operator_reply=head.reply or ""
        )
        return [
            stamp(
                PersistentMemoryRequested,
                task_id=persist_task_id(head.task_id),
                exchange_task_id=head.task_id,
                cycle=head.cycle,
                key=kept_key(head.cycle, head.step, head.index),
                value=conversation_unit(exchange, head.analysis, cycle=head.cycle, at=stamp.ts),
                persistence_score=head.analysis.persistence_score,
                threshold=threshold,
            )
        ]
    if head.kept is not None and not head.kept.stored:
        return []  # the memory service answers
    return None


def _analysis(
    state: AgentState, stamp: _Stamper, analyser: str, exchange_task_id: str, cycle: int
) -> list[Event]:
    """The exchange just completed, recorded for its analysis: the heuristic's at once,
    or an open task for the model."""
    assert state.config is not None
    head = state.tool_queue[0]
    # A reply that timed out is the automatic one: no words of the operator's to analyse.
    unanswered = head.replied_by == "timeout"
    reply = "" if unanswered else head.reply or ""
    exchange = Exchange(agent_message=head.arguments["message"], operator_reply=reply)
    keep = state.config.cognition.recent_exchanges
    recent = state.exchanges[len(state.exchanges) - keep :] if keep else ()
    task_id = analysis_task_id(exchange_task_id)
    requested = stamp(
        OperatorMessageAnalysisRequested,
        task_id=task_id,
        exchange_task_id=exchange_task_id,
        cycle=cycle,
        exchange=exchange,
        recent=recent,
        analyser="model" if analyser == "model" and not unanswered else "heuristic",
    )
    if analyser == "model" and not unanswered:
        return [requested]
    reason = None
    if unanswered:
        operator = state.config.operator
        analysis = analyse_unanswered(operator.timeout_s, operator.auto_reply)
        if analyser == "model":
            reason = "the operator did not reply in time: no words of theirs for the model"
    else:
        analysis = analyse_heuristically(exchange, recent, _block_memories(state), now=stamp.ts)
    analysed = stamp(
        OperatorMessageAnalyzed,
        task_id=task_id,
        analysis=analysis.model_dump(),
        fallback_reason=reason,
    )
    return [requested, analysed]


def _block_memories(state: AgentState) -> list[Candidate]:
    """The memories the heuristic may name as relevant: the cycle's retrieved ones
    (``cognition.memory_block``; logged, so an analysis replays exactly). None
    without the block: the core holds no other copy of the run's memory."""
    return _candidates(state.memory_block)


def _candidates(memories: tuple[RetrievedMemory, ...]) -> list[Candidate]:
    return [Candidate(m.key, m.value, m.written_at) for m in memories]


def _after_open_failure(
    state: AgentState, task: OpenTask, config: RunConfig, stamp: _Stamper
) -> Event:
    """An open task failed: sent again within the budget; then the heuristic stands in,
    with the failure stated."""
    reason = task.failure or "unknown"
    if task.sends <= config.deadlines.retries:
        return stamp(TaskRetried, task_id=task.task_id, send=task.sends + 1, reason=reason)
    return stamp(
        OperatorMessageAnalyzed,
        task_id=task.task_id,
        analysis=analyse_heuristically(
            task.exchange, task.recent, _candidates(task.memories), now=stamp.ts
        ).model_dump(),
        fallback_reason=(
            f"the analysis {task.task_id} failed {task.sends} time(s); last: {reason}"
        ),
    )


TASK_KINDS: dict[Phase, str] = {
    "seeding": "the fork's memory seed",
    "checking": "the model check",
    "awaiting_llm": "the LLM call",
    "embedding": "the reflection embedding",
    "checking_paragraphs": "the paragraph check",
    "tools": "the tool call",
    "retrieving": "the memory retrieval",
}


def _after_task_failure(state: AgentState, config: RunConfig, stamp: _Stamper) -> Event:
    """Retry the failed task within the budget; then end the wait: an operator wait
    with the policy reply, an embedding without an assessment, anything else by
    failing the run with the reason."""
    reason = state.task_failure or "unknown"
    head = state.waiting_for
    if state.pending_task_id is None and head is not None:
        return stamp(
            OperatorReplied, task_id=head.task_id, text=config.operator.auto_reply, by="timeout"
        )
    task_id = state.pending_task_id or ""
    if state.task_sends <= config.deadlines.retries:
        return stamp(TaskRetried, task_id=task_id, send=state.task_sends + 1, reason=reason)
    what = TASK_KINDS.get(state.phase, "the task")
    summary = f"{what} {task_id} failed {state.task_sends} time(s); last: {reason}"
    if state.phase in ("embedding", "checking_paragraphs"):
        return stamp(EmbeddingFailed, task_id=task_id, cycle=state.cycle_number, error=summary)
    if state.phase == "retrieving":  # the cycle goes on without its block, the reason logged
        cycle = state.cycle_number + 1
        return stamp(MemoriesRetrieved, task_id=task_id, cycle=cycle, error=summary)
    return stamp(RunFailed, reason=summary)


def prompt_hashes(config: RunConfig, prompt: str) -> dict[str, str]:
    """SHA-256 of every text the platform puts into this run's prompts."""
    texts = {
        "system_prompt": config.system_prompt,
        "system_prompt_with_tools": prompt,
        "tools_paragraph": TOOLS_PARAGRAPH,
        "cycle_start_message": config.cycle_start_message,
        "operator_auto_reply": config.operator.auto_reply,
        "advisory_high": HIGH_ADVISORY,
        "advisory_moderate": MODERATE_ADVISORY,
        "regeneration_request": augment_prompt_with_feedback(REGENERATE_REQUEST, "{feedback}"),
        "final_call_note": final_call_note(0),
    }
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()}


class _Stamper:
    """Gives derived events their envelope: id ``{input_id}.{n}``, the input's time,
    the run as correlation, and the previous event as cause."""

    def __init__(self, trigger: Event) -> None:
        self._trigger = trigger
        self._count = 0
        self._last_id = trigger.event_id

    def __call__(self, cls: type[EventBase], **data: Any) -> Event:
        self._count += 1
        data.setdefault("causation_id", self._last_id)
        event: Event = cls(  # type: ignore[assignment]
            event_id=f"{self._trigger.event_id}.{self._count}",
            run_id=self._trigger.run_id,
            ts=self._trigger.ts,
            correlation_id=self._trigger.run_id,
            **data,
        )
        self._last_id = event.event_id
        return event

    @property
    def ts(self) -> datetime:
        """The time every derived event gets: the input's."""
        return self._trigger.ts


__all__ = ["Decision", "Task", "advance", "decide", "pending_tasks", "rejection"]
