"""The envelope every run-log event carries."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict


class EventBase(BaseModel):
    """Fields common to every event. Subclasses add a literal ``type`` and their data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str
    """Unique id: an input event takes its inbox message id, a decided event
    ``{input_id}.{n}``, so replaying ``decide`` reproduces ids exactly."""
    run_id: str
    schema_version: Literal[1] = 1
    """The shape version of this event type. A type whose shape changes overrides
    this with ``Literal[N] = N`` and registers an upcaster from N-1 in the catalog;
    events exist in memory at their current version only (the codec upcasts older
    stored ones and refuses newer ones)."""
    ts: datetime
    """UTC time the orchestrator received the input this event belongs to."""
    causation_id: str | None = None
    """The task this result answers, or the event that led to this one."""
    correlation_id: str
    """The run the event belongs to (shared by everything a run causes, tasks included)."""


class InputEvent(EventBase):
    """An event that enters through the orchestrator's inbox: a worker's result or a CLI
    command. ``decide`` accepts or rejects it; every other event is decided by the
    orchestrator from an input. The inbox's list of input types is derived from this base."""
