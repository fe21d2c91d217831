"""What seed 004's ``search_memory`` searches, projected from a run's log. Pure.

Memory values: the writes and deletes the memory service carried out (a logged
``ToolCallCompleted`` with ``ok``), applied in log order as the memory service
applies them. Reflections: each cycle's text with its logged vector.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from contreact_events.catalog import Event
from contreact_events.catalog.diversity import ReflectionEmbedded
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested


@dataclass
class MemoryProjection:
    values: dict[str, str] = field(default_factory=dict)
    reflections: dict[int, tuple[str, tuple[float, ...]]] = field(default_factory=dict)
    _requested: dict[str, ToolCallRequested] = field(default_factory=dict)
    _texts: dict[int, str] = field(default_factory=dict)

    def feed(self, events: Iterable[Event]) -> None:
        for event in events:
            if isinstance(event, ToolCallRequested) and event.tool_name in ("write", "delete"):
                self._requested[event.task_id] = event
            elif isinstance(event, ToolCallCompleted):
                request = self._requested.pop(event.task_id, None)
                if request is not None and event.ok:
                    self._apply(request)
            elif event.type == "ReflectionRecorded":
                self._texts[event.cycle] = event.text
            elif isinstance(event, ReflectionEmbedded):
                self.reflections[event.cycle] = (self._texts.get(event.cycle, ""), event.vector)

    def _apply(self, request: ToolCallRequested) -> None:
        key = str(request.arguments.get("key", ""))
        if request.tool_name == "write":
            self.values[key] = str(request.arguments.get("value", ""))
        else:
            self.values.pop(key, None)
