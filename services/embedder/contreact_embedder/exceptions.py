"""Errors of the embedder."""

from __future__ import annotations


class EmbedderError(Exception):
    """Base class of every error raised by contreact_embedder."""


class ModelUnavailable(EmbedderError):
    """The model cannot be loaded (not installed, wrong directory, not the 384-d
    all-MiniLM-L6-v2). Raised at start, before any task is read, with the fix."""


class EmbeddingError(EmbedderError):
    """A text could not be embedded. The worker answers its task with
    ``EmbeddingFailed``; the other tasks of the batch are unaffected."""
