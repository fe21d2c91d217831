"""Errors of the memory service."""

from __future__ import annotations


class MemoryServiceError(Exception):
    """Base class of every error raised by contreact_memory."""


class ToolError(MemoryServiceError):
    """A tool call that cannot run as asked (missing key, bad arguments).

    Never escapes the store: it becomes an ``ok=False`` tool result for the model.
    """


class StoreUnavailable(MemoryServiceError):
    """The SQLite file cannot be opened (missing when it must exist, not writable)."""


class RebuildTargetExists(MemoryServiceError):
    """A rebuild was asked to write into a store file that already exists."""


class SeedUnavailable(MemoryServiceError):
    """A fork's seed cannot be applied yet (its log cannot be read here, or holds fewer
    events than the seed replays): left pending and tried again."""
