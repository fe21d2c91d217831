"""``history``, pure: the part of a run's history its prompts carry (truncate: the last
``keep_last`` messages; compact: the summary, then what came after it), when a
compaction is due, and what the summarising model is sent. See ``config.history``."""

from __future__ import annotations

from contreact_events.catalog import Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.config import RunConfig
from contreact_events.config.history import SUMMARY_TURN
from contreact_events.core.folding import trusted
from contreact_events.core.stamper import Stamper
from contreact_events.core.state import AgentState
from contreact_events.core.task_ids import compaction_task_id
from contreact_events.wire.codec import dumps


def window(state: AgentState) -> tuple[tuple[ChatMessage, ...], int]:
    """What the prompts carry before the history's tail (the summary turn, or nothing),
    and where in ``message_history`` the tail starts."""
    config = state.config
    history = state.message_history
    if config is None or config.history.policy == "none":
        return (), 0
    if config.history.policy == "truncate":
        return (), _start(history, len(history) - config.history.keep_last)
    if state.summary is None:
        return (), 0
    turn = trusted(ChatMessage, role="user", content=SUMMARY_TURN.format(summary=state.summary))
    return (turn,), state.summary_upto


def window_described(state: AgentState) -> str:
    """Which history a prompt built in ``state`` carries, in words (an assessment and a
    query record it): ``whole``, or what stands for the older part."""
    lead, start = window(state)
    if lead:
        return f"summary of messages 1-{start} (compaction {state.compactions}), then {start + 1}-"
    if start:
        return f"truncated: messages {start + 1}- of {len(state.message_history)}"
    return "whole"


def _start(history: tuple[ChatMessage, ...], start: int) -> int:
    """``start`` (at least 0), moved on past tool results: a result whose call was cut
    would stand alone."""
    start = max(start, 0)
    while start < len(history) and history[start].role == "tool":
        start += 1
    return start


def compaction_due(state: AgentState, config: RunConfig) -> bool:
    """``compact``: whether the next cycle starts with a summary of the older part."""
    rule = config.history
    if rule.policy != "compact":
        return False
    since = len(state.message_history) - state.summary_upto
    upto = _start(state.message_history, len(state.message_history) - rule.keep_last)
    if upto <= state.summary_upto:
        return False  # nothing older than the kept part is left to summarise
    by_messages = rule.threshold_messages is not None and since > rule.threshold_messages
    by_tokens = (
        rule.threshold_tokens is not None and state.last_prompt_tokens > rule.threshold_tokens
    )
    return by_messages or by_tokens


def compaction_request(state: AgentState, config: RunConfig, stamp: Stamper) -> Event:
    cycle = state.cycle_number + 1
    history = state.message_history
    return stamp(
        HistoryCompactionRequested,
        task_id=compaction_task_id(state.run_id, cycle),
        cycle=cycle,
        upto=_start(history, len(history) - config.history.keep_last),
        messages=len(history),
        model=config.history.model or config.model_name,
    )


def compaction_messages(state: AgentState, config: RunConfig) -> tuple[ChatMessage, ...]:
    """What the summarising model is sent: the instruction, then the part to summarise
    as one transcript (the earlier summary first, when there is one)."""
    lines = []
    if state.summary is not None:
        lines.append(f"[your earlier summary]\n{state.summary}")
    for message in state.message_history[state.summary_upto : state.compaction_upto]:
        lines.append(f"[{message.role}] {_text(message)}")
    return (
        ChatMessage(role="system", content=config.history.prompt),
        ChatMessage(role="user", content="\n\n".join(lines)),
    )


def _text(message: ChatMessage) -> str:
    calls = "; ".join(
        f"called {c.name}({dumps(c.arguments, sort_keys=True).decode()})"
        for c in message.tool_calls
    )
    return " ".join(part for part in (message.content, calls) if part)
