"""Errors of the orchestrator service."""

from __future__ import annotations


class OrchestratorError(Exception):
    """Base class of every error raised by contreact_orchestrator."""


class LeaseLost(OrchestratorError):
    """This replica no longer owns the shard of the input it was handling: the input
    stays in the inbox for the shard's new owner."""


class ShardCountMismatch(OrchestratorError):
    """The configured number of inbox shards is not the deployment's."""
