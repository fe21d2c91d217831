"""A researcher's control of a live run: settings changed mid-run with a reason
(``contreact set``).

The change is an input event, so the log holds who changed what, when and why, and
the orchestrator's decisions after it read the new values exactly as a replay does.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contreact_events.catalog.envelope import InputEvent


class SettingsChanged(InputEvent):
    """Settings of a live run changed (input from the CLI, ``contreact set``).

    Accepted while the run is active, when every key is one a live run may change
    (``config.live_settings``) and the new values pass the config's own validation
    against the configuration in force. The fold puts the new values into the run's
    configuration at once; the run reads each at its next use (the next step, the next
    cycle's end, the next operator call, the next wait checked: ``LIVE`` says which),
    never for what it has done."""

    type: Literal["SettingsChanged"] = "SettingsChanged"
    changes: dict[str, tuple[Any, Any]] = Field(min_length=1)
    """By dotted path: (the value in force before, the new value)."""
    by: str = Field(min_length=1, max_length=200)
    """Who changed it (``--by``, else ``CONTREACT_BY`` or the login name)."""
    reason: str = Field(min_length=1, max_length=2000)
    """Why, as given (``--reason``; untrusted text: escape it when shown)."""
    cycle: int = 0
    """The cycle the run was in when the CLI asked (for the record; the change applies
    where the log puts it)."""


class RunPaused(InputEvent):
    """A researcher paused the run (input from the CLI, ``contreact pause``, ``pause
    --step``; runs requested before ``RunRequested.stepping`` began stepping by one).

    The run finishes what it waits on now (the call or tool in flight), then rests
    before its next model call or its next cycle: it holds no LLM worker, no host slot
    and no deadline while it rests, and its log says so (a restarted orchestrator folds
    the same rest). ``stepping``: it rests at every model call until ``contreact step``
    lets one more happen."""

    type: Literal["RunPaused"] = "RunPaused"
    by: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2000)
    stepping: bool = False


class RunResumed(InputEvent):
    """A researcher let the run go on (``contreact resume``), or, ``step``, one model call
    more and the tool calls it makes (``contreact step``, only for a stepping run)."""

    type: Literal["RunResumed"] = "RunResumed"
    by: str = Field(min_length=1, max_length=200)
    step: bool = False
