"""The envelope every run-log event carries."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


class EventBase(BaseModel):
    """Fields common to every event. Subclasses add a literal ``type`` and their data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    SCHEMA_VERSION: ClassVar[int] = 1

    event_id: str
    """Unique id: an input event takes its inbox message id, a decided event
    ``{input_id}.{n}``, so replaying ``decide`` reproduces ids exactly."""
    run_id: str
    schema_version: int = Field(default=1, ge=1)
    ts: datetime
    """UTC time the orchestrator received the input this event belongs to."""
    causation_id: str | None = None
    """The task this result answers, or the event that led to this one."""
    correlation_id: str
    """The run the event belongs to (shared by everything a run causes, tasks included)."""
