"""Errors of the Redis side."""

from __future__ import annotations


class BusError(Exception):
    """Base class of every error raised by contreact_bus."""


class RedisUnavailable(BusError):
    """Redis does not answer at the configured URL."""


class RunNotFound(BusError):
    """Neither Redis nor the archive holds the run."""


class StaleWriter(BusError):
    """A run-log append was refused: the writer's view is out of date."""


class FencedOut(StaleWriter):
    """A newer owner (a higher fencing token) writes this run's log now."""


class LogMoved(StaleWriter):
    """The log's length is not what the writer held: someone (perhaps its own write
    whose answer was lost) appended since. Refold from the log."""
