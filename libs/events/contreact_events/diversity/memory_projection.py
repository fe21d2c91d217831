"""What seed 004's ``search_memory`` searches, projected from a run's log. Pure.

Memory values: the writes and deletes the memory service carried out (a logged
``ToolCallCompleted`` with ``ok``), and the memory policy's stores of kept exchanges
(``PersistentMemoryStored`` with ``ok``), applied in log order as the memory service
applies them, each with the time its write completed. Reflections: each cycle's text
with its logged vector and the time it was recorded. The time of each
``search_memory`` request is kept too: the search ranks recency against it, so the
same log always gives the same ranking.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from contreact_events.catalog import Event
from contreact_events.catalog.cognition import (
    MemoriesRetrievalRequested,
    PersistentMemoryRequested,
    PersistentMemoryStored,
)
from contreact_events.catalog.diversity import ReflectionEmbedded
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested

_SEARCH = "search_memory"
"""``core.tools.SEARCH_TOOL``; named here because ``core`` imports this layer."""


@dataclass
class MemoryProjection:
    values: dict[str, str] = field(default_factory=dict)
    reflections: dict[int, tuple[str, tuple[float, ...]]] = field(default_factory=dict)
    written_at: dict[str, datetime] = field(default_factory=dict)
    """When each value in ``values`` was last written."""
    reflected_at: dict[int, datetime] = field(default_factory=dict)
    """When each cycle's reflection was recorded."""
    searched_at: dict[str, datetime] = field(default_factory=dict)
    """Task id of each ``search_memory`` call (and of each memory retrieval for the
    prompt block) -> when it was requested."""
    last_ts: datetime | None = None
    """The time of the newest event fed."""
    _requested: dict[str, ToolCallRequested] = field(default_factory=dict)
    _texts: dict[int, tuple[str, datetime]] = field(default_factory=dict)
    _kept: dict[str, PersistentMemoryRequested] = field(default_factory=dict)

    def feed(self, events: Iterable[Event]) -> None:
        for event in events:
            self.last_ts = event.ts
            if isinstance(event, ToolCallRequested) and event.tool_name in ("write", "delete"):
                self._requested[event.task_id] = event
            elif isinstance(event, ToolCallRequested) and event.tool_name == _SEARCH:
                self.searched_at[event.task_id] = event.ts
            elif isinstance(event, ToolCallCompleted):
                request = self._requested.pop(event.task_id, None)
                if request is not None and event.ok:
                    self._apply(request, event.ts)
            elif isinstance(event, MemoriesRetrievalRequested):
                self.searched_at[event.task_id] = event.ts
            elif isinstance(event, PersistentMemoryRequested):
                self._kept[event.task_id] = event
            elif isinstance(event, PersistentMemoryStored):
                kept = self._kept.pop(event.task_id, None)
                if kept is not None and event.ok:
                    self.values[kept.key] = kept.value
                    self.written_at[kept.key] = event.ts
            elif event.type == "ReflectionRecorded":
                self._texts[event.cycle] = (event.text, event.ts)
            elif isinstance(event, ReflectionEmbedded):
                text, ts = self._texts.get(event.cycle, ("", event.ts))
                self.reflections[event.cycle] = (text, event.vector)
                self.reflected_at[event.cycle] = ts

    def _apply(self, request: ToolCallRequested, ts: datetime) -> None:
        key = str(request.arguments.get("key", ""))
        if request.tool_name == "write":
            self.values[key] = str(request.arguments.get("value", ""))
            self.written_at[key] = ts
        else:
            self.values.pop(key, None)
            self.written_at.pop(key, None)
