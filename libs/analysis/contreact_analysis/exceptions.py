"""Errors of the analysis package. Each names the problem and, where there is one, the fix."""

from __future__ import annotations


class AnalysisError(Exception):
    """Base class of every error raised by contreact_analysis."""


class NotEnoughData(AnalysisError):
    """A statistic needs more observations than it was given (the message says how many)."""


class UnreadableRun(AnalysisError):
    """A run's log cannot be read or folded (the message names the run and the event)."""


class NoRuns(AnalysisError):
    """The selection (runs, experiment) matched no run that can be analysed."""
