"""What a run's tool calls did to its memory, and how tool calls are counted by kind:
one implementation for the dashboard's read models and the analysis dataframes. Pure.

A memory change is derived from the call as the log records it (the tool, its
arguments, whether it succeeded): a successful ``write`` adds or changes its key
(writing the value the key already holds changes nothing), a successful ``delete``
removes a key that was there. Reads, listings and searches change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from contreact_events.config import RunConfig
from contreact_events.core.tools import ALL_TOOLS, SEARCH_TOOL

KNOWN_TOOLS = (*ALL_TOOLS, SEARCH_TOOL)
UNKNOWN_TOOL = "(unknown tool)"
ADDED_TOOL = "(added tool)"
"""Calls of the tools a run's config adds as data (``tools.added``) are counted under
this name (their names are in the tool calls' rows)."""
"""Calls of tools the agent made up are counted under this name (their names, agent
text, stay in the event log)."""

ChangeKind = Literal["added", "changed", "deleted"]


class MemoryEffect(NamedTuple):
    """One key's change: ``value`` is None for a deletion."""

    key: str
    change: ChangeKind
    value: str | None


def tool_kind(tool_name: str, config: RunConfig | None = None) -> str:
    """The name a call is counted under: the tool's, ``ADDED_TOOL`` for a tool the run's
    config adds as data (``config``: the run's, if known), or ``UNKNOWN_TOOL`` for a
    made-up one."""
    if tool_name in KNOWN_TOOLS:
        return tool_name
    if config is not None and any(tool.name == tool_name for tool in config.tools.added):
        return ADDED_TOOL
    return UNKNOWN_TOOL


def memory_effect(
    memory: Mapping[str, str], tool: str, arguments: Mapping[str, Any]
) -> MemoryEffect | None:
    """What a successful call of ``tool`` does to ``memory`` (None: nothing)."""
    if tool not in ("write", "delete"):
        return None
    key = str(arguments.get("key", ""))
    if tool == "write":
        value = str(arguments.get("value", ""))
        if memory.get(key) == value:
            return None
        return MemoryEffect(key, "changed" if key in memory else "added", value)
    if key in memory:
        return MemoryEffect(key, "deleted", None)
    return None


def apply_effect(memory: dict[str, str], effect: MemoryEffect) -> None:
    """Apply ``effect`` to ``memory`` in place."""
    if effect.value is None:
        memory.pop(effect.key, None)
    else:
        memory[effect.key] = effect.value
