"""Embeddings for the search page's semantic mode: the query, and the texts whose
vector the logs do not hold (memory values, operator messages, tool outputs), with
the embedder's model loaded in this process, as ``contreact search`` loads it.

The model is loaded on the first semantic search. Texts embedded once are kept (by
their text, up to ``CACHE_TEXTS``), so a second search over the same runs embeds
nothing but its query. One search embeds at most ``MAX_NEW_TEXTS`` texts it has not
seen: past that, it asks to be narrowed instead of keeping the page waiting.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from contreact_ui.exceptions import BadQuery

Vector = npt.NDArray[np.float32]
MAX_NEW_TEXTS = 2_000
CACHE_TEXTS = 200_000


class Model(Protocol):
    def embed_batch(self, texts: Sequence[str]) -> Sequence[Any]: ...


class TextEmbedder:
    """Embeds with ``model`` (default: the embedder's ``EmbeddingService``, loaded
    when first needed); thread-safe."""

    def __init__(self, model: Model | None = None) -> None:
        self._model = model
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def model(self) -> Model:
        if self._model is None:
            try:
                from contreact_embedder.embedding_service import EmbeddingService
                from contreact_embedder.exceptions import ModelUnavailable
            except ImportError:
                raise BadQuery(
                    "semantic search embeds the query with the embedder's model, which is not "
                    "installed with this dashboard: install it with `pip install "
                    "'contreact[services]'`, or search by keyword"
                ) from None
            try:
                self._model = EmbeddingService()
            except ModelUnavailable as exc:
                raise BadQuery(f"semantic search cannot load its model: {exc}") from None
        return self._model

    def query(self, text: str) -> Vector:
        return self._embed([text])[0]

    def fill(
        self, texts: Sequence[str], logged: Sequence[Vector | None], *, scope: str
    ) -> list[Vector]:
        """A vector for every text: the logged one, else a kept one, else embedded now
        (at most ``MAX_NEW_TEXTS``; BadQuery naming ``scope``, how to narrow, past it)."""
        with self._lock:
            missing = list(
                dict.fromkeys(
                    t
                    for t, v in zip(texts, logged, strict=True)
                    if v is None and t not in self._cache
                )
            )
        if len(missing) > MAX_NEW_TEXTS:
            raise BadQuery(
                f"semantic search would embed {len(missing):,} texts not embedded before "
                f"(at most {MAX_NEW_TEXTS:,} a search): {scope}"
            )
        if missing:
            self._embed(missing)
        with self._lock:
            return [
                v if v is not None else self._cache[t] for t, v in zip(texts, logged, strict=True)
            ]

    def _embed(self, texts: list[str]) -> list[Vector]:
        model = self.model()
        vectors = [np.asarray(e.vector, dtype=np.float32) for e in model.embed_batch(texts)]
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > CACHE_TEXTS:
                self._cache.popitem(last=False)
        return vectors
