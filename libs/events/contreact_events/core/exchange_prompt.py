"""The analysis call's prompt (seed 002): what the model is asked about one operator
exchange, answered as JSON with exactly ``AnalysisFields``' keys. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cognition import RetrievedMemory
from contreact_events.catalog.exchange import Analysis, Exchange
from contreact_events.cognition.heuristic import analyse_heuristically
from contreact_events.cognition.model_answer import parse_model_analysis
from contreact_events.cognition.retrieval import Candidate

ANALYSIS_INSTRUCTIONS = """You analyse one exchange between an AI agent and its operator.
Answer with one JSON object and nothing else, with exactly these keys:
- "intent": what the operator's reply is: "question" (asks for information), "request"
  (asks the agent to do something), "statement" (shares information or an opinion) or
  "conversation" (greetings, thanks, small talk, a bare acknowledgement).
- "context_type", judged against the recent exchanges: "new" (a topic none of them had),
  "continuation" (goes on with their thread), "clarification" (asks about or corrects
  something already said) or "related" (a recent topic from a new angle).
- "confidence": 0 to 1, how sure you are of intent and context type.
- "persistence_score": 0 to 1, how much the exchange is worth keeping in long-term memory.
- "summary": one sentence (at most 300 characters) on what the operator wants or says.
- "relevant_memories": a list of memory keys relevant to it (empty if none are given).
- "reasoning": why you classified it so (at most 600 characters)."""


def analysis_messages(
    exchange: Exchange,
    recent: Sequence[Exchange],
    memories: Sequence[RetrievedMemory] = (),
) -> tuple[ChatMessage, ...]:
    """The system instructions and the exchange (with the recent ones, and the cycle's
    retrieved memories when ``cognition.memory_block`` gave some) as JSON data: agent
    text is data here, never instructions."""
    data: dict[str, Any] = {
        "recent_exchanges": [e.model_dump() for e in recent],
        "exchange": exchange.model_dump(),
    }
    if memories:  # absent otherwise: the tasks of runs without the block are unchanged
        data["memories"] = [
            {"key": m.key, "value": m.value, "written_at": m.written_at.isoformat()}
            for m in memories
        ]
    return (
        ChatMessage(role="system", content=ANALYSIS_INSTRUCTIONS),
        ChatMessage(role="user", content=orjson.dumps(data).decode()),
    )


def exchanges_of(messages: Sequence[ChatMessage]) -> tuple[Exchange, tuple[Exchange, ...]]:
    """The exchange and the recent ones back from an analysis task's messages."""
    data = orjson.loads(messages[-1].content)
    recent = tuple(Exchange.model_validate(e) for e in data["recent_exchanges"])
    return Exchange.model_validate(data["exchange"]), recent


def memories_of(messages: Sequence[ChatMessage]) -> list[Candidate] | None:
    """The memories an analysis task gave the model (None: it gave none)."""
    data = orjson.loads(messages[-1].content)
    if "memories" not in data:
        return None
    return [
        Candidate(m["key"], m["value"], datetime.fromisoformat(m["written_at"]))
        for m in data["memories"]
    ]


def analysis_from_answer(raw: str, messages: Sequence[ChatMessage]) -> tuple[Analysis, str | None]:
    """The model's answer as the exchange's analysis, or, when it is not one
    (malformed, partial, out of its enums, oversized, naming a memory it was not
    given), the heuristic's with the reason: (analysis, fallback reason or None)."""
    memories = memories_of(messages)
    known = None if memories is None else {m.id for m in memories}
    parsed = parse_model_analysis(raw, known)
    if isinstance(parsed, Analysis):
        return parsed, None
    reason = f"the model's answer was refused ({parsed.problem}: {parsed.reason})"
    return _heuristic(messages), reason[:1000]


def heuristic_instead(messages: Sequence[ChatMessage], reason: str) -> tuple[Analysis, str]:
    """The heuristic's analysis when no model answers, with the reason."""
    return _heuristic(messages), reason[:1000]


def _heuristic(messages: Sequence[ChatMessage]) -> Analysis:
    exchange, recent = exchanges_of(messages)
    return analyse_heuristically(exchange, recent, memories_of(messages) or ())
