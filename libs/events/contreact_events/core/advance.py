"""``advance(state, stamp)``: the events the state machine derives from a state alone
(seed 003: ASSEMBLE_PROMPT → INVOKE_LLM → PARSE_RESPONSE → DISPATCH_TOOL |
FINALIZE_CYCLE → TERMINATE_OR_CONTINUE), one step function per phase; empty when the
run must wait on something outside. ``decide`` calls it until it is. The cognition
steps (memory retrieval, an exchange's analysis, the memory policy) are in
``cognition_steps``. Pure.
"""

from __future__ import annotations

import hashlib
import json

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import MemoriesRetrieved
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
    LLMRequested,
    ReflectionRecorded,
    StepLimitReached,
)
from contreact_events.catalog.delivery import TaskRetried
from contreact_events.catalog.diversity import (
    EmbeddingFailed,
    EmbeddingRequested,
    ParagraphCheckRequested,
    ParagraphsAccepted,
    RegenerationRequested,
    SimilarityAssessed,
    TopicExhausted,
)
from contreact_events.catalog.run import RunCompleted, RunFailed, RunStarted, RunStopped
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.config import RunConfig
from contreact_events.config.spend import budget_reached
from contreact_events.core.cognition_steps import (
    after_open_failure,
    exchange_analysis,
    memory_policy,
    retrieval,
    retrieves,
)
from contreact_events.core.compaction import compaction_due, compaction_request
from contreact_events.core.data_tools import added_tool, prompt_lines, run_schemas, uses_of
from contreact_events.core.fold import final_call_note
from contreact_events.core.prompt import prompt_sha256
from contreact_events.core.stamper import Stamper
from contreact_events.core.state import AgentState, Attempt, Phase
from contreact_events.core.task_ids import (
    embed_task_id,
    llm_task_id,
    paragraph_task_id,
    tool_task_id,
)
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

REGENERATE_REQUEST = "Write your answer for this cycle again."
"""What the feedback of seed 001 is put before when an answer is asked for again."""


def advance(state: AgentState, stamp: Stamper) -> list[Event]:
    """The events that follow from ``state`` alone; empty when the run must wait."""
    config = state.config
    if config is None:
        return []
    if state.task_failure is not None:
        return [_after_task_failure(state, config, stamp)]
    failed = next((t for t in state.open_tasks if t.failure is not None), None)
    if failed is not None:
        return [after_open_failure(state, failed, config, stamp)]
    if resting(state):
        return []
    match state.phase:
        case "starting":
            offered = offered_tools(config.tools.search_memory)
            prompt = system_prompt_with_tools(
                config.system_prompt, offered, prompt_lines(config.tools)
            )
            tools = run_schemas(tool_schemas(offered), config.tools)
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
            if compaction_due(state, config):
                return [compaction_request(state, config, stamp)]
            if retrieves(state, config):
                return [retrieval(state, config, stamp)]
            return [stamp(CycleStarted, cycle=state.cycle_number + 1, advisory=None)]
        case "calling":
            over = over_budget(state, config, stamp)
            if over is not None:
                return [stamp(RunStopped, detail=over, cycle=state.cycle_number)]
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
            if compaction_due(state, config):
                return [compaction_request(state, config, stamp)]
            if retrieves(state, config):
                return [retrieval(state, config, stamp)]
            return [stamp(CycleStarted, cycle=state.cycle_number + 1, advisory=state.next_advisory)]
        case "failing":
            return [stamp(RunFailed, reason=state.failure_reason or "unknown failure")]
    return []


def resting(state: AgentState) -> bool:
    """A paused run rests before its next model call or cycle (a stepping one before a
    model call it has no step for): nothing is derived, so no task is sent and no
    deadline runs (``contreact pause``, ``contreact step``)."""
    if not (state.paused or state.stepping):
        return False
    if state.phase == "calling":
        return state.paused or state.step_grants == 0
    if state.phase == "cycle_start":
        return state.paused
    if state.phase == "cycle_end" and state.config is not None:
        return state.paused and state.cycle_number < state.config.cycle_count
    return False


def over_budget(state: AgentState, config: RunConfig, stamp: Stamper) -> str | None:
    """Which limit of the run's budget its spend has reached before the next call, in
    words (the time is the deciding input's: pure); None: the call may go."""
    if config.budget is None:
        return None
    started = state.started_at
    elapsed = (stamp.ts - started).total_seconds() if started is not None else None
    return budget_reached(
        config.budget, tokens=state.spent_tokens, cost=state.spent_cost, elapsed_s=elapsed
    )


def _after_response(state: AgentState, stamp: Stamper) -> list[Event]:
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


def _final_call(state: AgentState, stamp: Stamper) -> Event:
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


def _after_paragraph_check(state: AgentState, stamp: Stamper) -> list[Event]:
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


def _accept(state: AgentState, stamp: Stamper, attempt: Attempt, *, relaxed: bool) -> list[Event]:
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


def _after_reflection(state: AgentState, stamp: Stamper) -> Event:
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


def _assessment(state: AgentState, stamp: Stamper) -> Event:
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


def _cycle_ended(state: AgentState, stamp: Stamper) -> Event:
    return stamp(
        CycleEnded,
        cycle=state.cycle_number,
        ended_by="reflection"
        if state.reflection_complete and not state.final_call
        else "step_limit",
        metrics=state.metrics,
    )


def _next_tool_step(state: AgentState, stamp: Stamper) -> list[Event]:
    assert state.config is not None
    head = state.tool_queue[0]
    done = {"task_id": head.task_id, "tool_name": head.tool_name, "causation_id": head.task_id}
    if head.problem is not None:
        return [stamp(ToolCallCompleted, output=head.problem, ok=False, **done)]
    added = added_tool(state.config, head.tool_name)
    if added is not None:  # answered from the call's index alone
        reply = added.reply(uses_of(state.tool_uses, head.tool_name))
        return [stamp(ToolCallCompleted, output=reply, ok=True, **done)]
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
        return exchange_analysis(state, stamp, analyser, head.task_id, head.cycle)
    if state.config.cognition.memory_policy:
        kept = memory_policy(state, stamp)
        if kept is not None:
            return kept
    return [stamp(ToolCallCompleted, output=head.reply, ok=True, **done)]


TASK_KINDS: dict[Phase, str] = {
    "seeding": "the fork's memory seed",
    "checking": "the model check",
    "awaiting_llm": "the LLM call",
    "embedding": "the reflection embedding",
    "checking_paragraphs": "the paragraph check",
    "tools": "the tool call",
    "retrieving": "the memory retrieval",
    "compacting": "the history compaction",
}


def _after_task_failure(state: AgentState, config: RunConfig, stamp: Stamper) -> Event:
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
    for tool in config.tools.added:  # what the model was shown of each added tool
        texts[f"tool:{tool.name}"] = tool.description
    if config.tools.added or config.tools.self_report is not None:
        offered = offered_tools(config.tools.search_memory)
        schemas = run_schemas(tool_schemas(offered), config.tools)
        texts["tool_schemas"] = json.dumps(schemas, sort_keys=True, ensure_ascii=False)
    if config.tools.self_report is not None:
        texts["self_report"] = prompt_lines(config.tools.model_copy(update={"added": ()}))
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()}
