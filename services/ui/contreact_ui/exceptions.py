"""Errors of the dashboard. Each names the problem and, where there is one, the fix."""

from __future__ import annotations

from typing import Any


class UIError(Exception):
    """Base class of every error raised by contreact_ui."""


class ProjectionError(UIError):
    """A run's log cannot be projected (it does not fold): the run is shown with this
    reason and no longer followed."""

    partial: Any = None
    """The delta of the events before the one that failed (a ``read_models.Delta``)."""


class ProjectionVersionMismatch(UIError):
    """The projection store was built by another version of the projections."""


class RunNotProjected(UIError):
    """The dashboard knows no run of this id (yet)."""


class BadQuery(UIError):
    """A query parameter is well formed but names nothing that exists."""


class StoreUnavailable(UIError):
    """The projection store does not exist (yet)."""
