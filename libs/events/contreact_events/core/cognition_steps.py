"""The cognition steps of ``advance`` (see ``docs/cognition.md``): the memories a cycle
is shown (``cognition.memory_block``), an operator exchange's analysis (the heuristic's
at once, or an open task for the model), the memory policy's store of an exchange, and
what follows when an open analysis fails. Pure.
"""

from __future__ import annotations

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import (
    MemoriesRetrievalRequested,
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    RetrievedMemory,
)
from contreact_events.catalog.delivery import TaskRetried
from contreact_events.catalog.exchange import Exchange
from contreact_events.cognition.heuristic import analyse_heuristically
from contreact_events.cognition.policy import conversation_unit, keeps, kept_key
from contreact_events.cognition.retrieval import Candidate
from contreact_events.cognition.unanswered import analyse_unanswered
from contreact_events.config import RunConfig
from contreact_events.core.prompt import retrieval_query
from contreact_events.core.stamper import Stamper
from contreact_events.core.state import AgentState, OpenTask
from contreact_events.core.task_ids import analysis_task_id, persist_task_id, retrieval_task_id


def retrieves(state: AgentState, config: RunConfig) -> bool:
    """``cognition.memory_block``: the next cycle's memories are not retrieved yet."""
    return config.cognition.memory_block and state.retrieved_for <= state.cycle_number


def retrieval(state: AgentState, config: RunConfig, stamp: Stamper) -> Event:
    cycle = state.cycle_number + 1
    return stamp(
        MemoriesRetrievalRequested,
        task_id=retrieval_task_id(state.run_id, cycle),
        cycle=cycle,
        query=retrieval_query(state),
        k=config.cognition.memory_block_k,
    )


def memory_policy(state: AgentState, stamp: Stamper) -> list[Event] | None:
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


UNANSWERED_FROM_RULES = 2
"""``cognition.heuristic_rules`` from which a reply that timed out is no operator's words
(``cognition/unanswered.py``); runs recorded with rules 1 analysed the automatic reply."""


def exchange_analysis(
    state: AgentState, stamp: Stamper, analyser: str, exchange_task_id: str, cycle: int
) -> list[Event]:
    """The exchange just completed, recorded for its analysis: the heuristic's at once,
    or an open task for the model."""
    assert state.config is not None
    head = state.tool_queue[0]
    rules = state.config.cognition.heuristic_rules
    # A reply that timed out is the automatic one: no words of the operator's to analyse
    # (from the rules' version 2 on: a run recorded before replays as it ran).
    unanswered = head.replied_by == "timeout" and rules >= UNANSWERED_FROM_RULES
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
        analysis = analyse_heuristically(
            exchange, recent, _block_memories(state), now=stamp.ts, rules=rules
        )
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


def after_open_failure(
    state: AgentState, task: OpenTask, config: RunConfig, stamp: Stamper
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
            task.exchange,
            task.recent,
            _candidates(task.memories),
            now=stamp.ts,
            rules=config.cognition.heuristic_rules,
        ).model_dump(),
        fallback_reason=(
            f"the analysis {task.task_id} failed {task.sends} time(s); last: {reason}"
        ),
    )
