"""ContReAct memory service: the agent's key-value memory tools on SQLite, applied
exactly once per task, isolated by run id, rebuildable from the run logs."""

from __future__ import annotations

from contreact_memory.store import MemoryStore, ToolOutcome

__all__ = ["MemoryStore", "ToolOutcome"]
