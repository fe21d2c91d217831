"""ContReAct embedder: reflections embedded with all-MiniLM-L6-v2 (384-d, unit
length), micro-batched across runs, answered into the orchestrator's inbox."""

from __future__ import annotations

from contreact_embedder.embedding_service import (
    DIMENSION,
    MODEL_NAME,
    Embedding,
    EmbeddingService,
)
from contreact_embedder.exceptions import EmbeddingError, ModelUnavailable

__all__ = [
    "DIMENSION",
    "MODEL_NAME",
    "Embedding",
    "EmbeddingError",
    "EmbeddingService",
    "ModelUnavailable",
]
