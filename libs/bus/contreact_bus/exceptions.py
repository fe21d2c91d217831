"""Errors of the Redis side."""

from __future__ import annotations


class BusError(Exception):
    """Base class of every error raised by contreact_bus."""


class RedisUnavailable(BusError):
    """Redis does not answer at the configured URL."""


class RunNotFound(BusError):
    """Neither Redis nor the archive holds the run."""
