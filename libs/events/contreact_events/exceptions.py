"""Errors of the event library. Each names the problem and, where there is one, the fix."""

from __future__ import annotations


class ContReActEventError(Exception):
    """Base class of every error raised by contreact_events."""


class ConfigError(ContReActEventError):
    """A run configuration is missing, malformed or inconsistent."""


class UnknownEventType(ContReActEventError):
    """A stored event names a type this code does not know."""


class NewerSchemaVersion(ContReActEventError):
    """A stored event was written by newer code than this one: upgrade to read it."""


class CorruptEvent(ContReActEventError):
    """A stored event cannot be decoded or does not validate against its schema."""


class WrongRun(ContReActEventError):
    """An event of one run was applied to the state of another."""


class InvalidTransition(ContReActEventError):
    """An event does not fit the state it is applied to (a corrupt or reordered log)."""


class NotReplayable(ContReActEventError):
    """A log cannot be re-driven: it is empty, does not begin with its request, or no
    longer replays under this code (``contreact replay RUN --check`` says where)."""


class ForkRefused(ContReActEventError):
    """A fork that cannot be made or cannot be honest (the message names why and the fix)."""


class UnknownInstrument(ConfigError):
    """An assessment names an instrument this code does not ship."""


class NotAssessable(ContReActEventError):
    """A run cannot be assessed (yet): it has not ended, or it has no completed cycle."""


class NotQueryable(ContReActEventError):
    """A run cannot be queried (``contreact query``): no call of its model yet, or a
    question that cannot be asked. One line, the fix."""
