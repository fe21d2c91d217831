"""Seed 002's persistent memory, as a run option (``cognition.memory_policy``). Pure.

Working memory is the run's conversation: every exchange is in it already. Persistent
memory is selective: an exchange whose analysis scores strictly above the run's
``cognition.persistence_threshold`` (seed 002: "only store if score > 0.6") is stored,
whole (seed 002's conversation unit), in the agent's memory under ``PERSISTENT_PREFIX``
by the platform: a logged memory task (tool ``POLICY_TOOL``), never by the agent. Its
``write`` and ``delete`` are refused on these keys (``reserved_key_problem``, the memory
store's answer), while ``read``, ``list`` and ``pattern_search`` see them. The
dashboard marks as persistent the entries the policy wrote (by the event that wrote
them, not by the prefix: without the policy an agent may write under it).
"""

from __future__ import annotations

from datetime import datetime

from contreact_events.catalog.exchange import Analysis, Exchange
from contreact_events.wire.codec import dumps

PERSISTENT_PREFIX = "persistent/"
"""Memory keys the memory policy owns. With the policy on, agent text cannot create or
remove them (without it, nothing reserves the prefix)."""

POLICY_TOOL = "persist"
"""The memory task that stores a kept exchange (not an agent tool: a model that calls
a tool of this name is told it does not exist, as for any tool it was not offered)."""


def is_persistent_key(key: str) -> bool:
    """Whether ``key`` lies under the memory policy's reserved prefix."""
    return key.startswith(PERSISTENT_PREFIX)


def keeps(analysis: Analysis, threshold: float) -> bool:
    """Whether the policy stores the exchange: its score strictly above the threshold."""
    return analysis.persistence_score > threshold


def kept_key(cycle: int, step: int, index: int) -> str:
    """The key of the exchange made by tool call ``index`` of ``step`` in ``cycle``:
    unique in the run, and ordered as the exchanges were (numbers zero-padded)."""
    return f"{PERSISTENT_PREFIX}exchange-c{cycle:03d}-s{step:02d}-t{index:02d}"


def conversation_unit(exchange: Exchange, analysis: Analysis, *, cycle: int, at: datetime) -> str:
    """The stored value: seed 002's conversation unit as JSON (keys sorted) that the
    agent reads back with ``read``; ``timestamp`` is when the policy kept it (the time
    of the input that completed the analysis, from the log)."""
    unit = {
        "agent_message": exchange.agent_message,
        "operator_reply": exchange.operator_reply,
        "intent": analysis.intent,
        "summary": analysis.summary,
        "persistence_score": analysis.persistence_score,
        "cycle": cycle,
        "timestamp": at.isoformat(),
    }
    return dumps(unit, sort_keys=True).decode()


def reserved_key_problem(tool: str, key: str) -> str | None:
    """The tool error for an agent's ``write`` or ``delete`` on a reserved key (None:
    no problem). Worded for the model: the rule, and what it can do instead."""
    if tool not in ("write", "delete") or not is_persistent_key(key):
        return None
    return (
        f"Error: keys under '{PERSISTENT_PREFIX}' are kept by the platform's memory policy "
        f"(important operator exchanges); {tool} cannot change them. Use read, list or "
        "pattern_search to see them, and write your own notes under another key."
    )
