"""``Stamper``: the envelope of the events ``decide`` derives from one input. Pure: the
ids and the time come from the input, never from a clock or a random source."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.envelope import EventBase


class Stamper:
    """Gives derived events their envelope: id ``{input_id}.{n}``, the input's time,
    the run as correlation, and the previous event as cause."""

    def __init__(self, trigger: Event) -> None:
        self._trigger = trigger
        self._count = 0
        self._last_id = trigger.event_id

    def __call__(self, cls: type[EventBase], **data: Any) -> Event:
        self._count += 1
        data.setdefault("causation_id", self._last_id)
        event: Event = cls(  # type: ignore[assignment]
            event_id=f"{self._trigger.event_id}.{self._count}",
            run_id=self._trigger.run_id,
            ts=self._trigger.ts,
            correlation_id=self._trigger.run_id,
            **data,
        )
        self._last_id = event.event_id
        return event

    @property
    def ts(self) -> datetime:
        """The time every derived event gets: the input's."""
        return self._trigger.ts
