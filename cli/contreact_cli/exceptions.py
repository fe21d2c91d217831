"""Errors of the CLI: each is printed as one line with the fix, never a traceback."""

from __future__ import annotations


class CLIError(Exception):
    """A problem the user can fix; the message says how."""


class ServicesNotRunning(CLIError):
    """The services a command needs do not answer."""
