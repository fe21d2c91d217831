"""Embeddings for the search page's semantic mode: the query, and the texts whose
vector the logs do not hold (memory values, operator messages, tool outputs), with
the embedder's model loaded in this process, as ``contreact search`` loads it
(``query_model``: the onnx runtime, which starts without PyTorch).

The model is loaded in the background when the dashboard starts (``warm``; the
setting ``CONTREACT_UI_WARM_SEARCH_MODEL``), else on the first semantic search; loading
takes seconds, so the search page says where it stands (``state``). Texts embedded
once are kept (by their text, up to ``CACHE_TEXTS``), so a second search over the same
runs embeds nothing but its query. One search embeds at most ``MAX_NEW_TEXTS`` texts it
has not seen: past that, it asks to be narrowed instead of keeping the page waiting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from contreact_ui.exceptions import BadQuery
from contreact_ui.models.research import SearchModelState

log = logging.getLogger(__name__)
Vector = npt.NDArray[np.float32]
MAX_NEW_TEXTS = 2_000
CACHE_TEXTS = 200_000
WARM_NICENESS = 19
"""The warming thread's priority (Linux niceness is per thread): the pages and the
follower come first while the model loads."""
WAITS_FOR_WARM_UP = "waiting for the search model's warm-up to end before exiting"


class Model(Protocol):
    def embed_batch(self, texts: Sequence[str]) -> Sequence[Any]: ...


class TextEmbedder:
    """Embeds with ``model`` (default: the embedder's ``EmbeddingService``, loaded
    when first needed); thread-safe."""

    def __init__(self, model: Model | None = None) -> None:
        self._model = model
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._loading = threading.Lock()  # one load, however many ask at once
        self._closing = threading.Event()
        self._warming: threading.Thread | None = None
        self.state: SearchModelState = "ready" if model is not None else "not loaded"
        self.problem: str | None = None
        """Why the model cannot be loaded (``state`` unavailable)."""

    def model(self) -> Model:
        if self._model is None:
            with self._loading:
                if self._model is None:
                    self.state = "loading"
                    try:
                        self._model = _load()
                    except BadQuery as exc:
                        self.state, self.problem = "unavailable", str(exc)
                        raise
                    self.state = "ready"
        return self._model

    def warm(self) -> threading.Thread:
        """Load the model (and run it once) in a background thread, so that the first
        search does not wait for it; a model that cannot load says why in ``problem``
        (and each semantic search says it again).

        Not a daemon, and ``close`` waits for it: a daemon thread still in PyTorch when
        the interpreter finalizes is ended by ``pthread_exit`` as it takes the GIL back,
        and that unwinds through a C++ destructor (pybind11's ``gil_scoped_release``),
        which calls ``std::terminate``: the dashboard died of SIGABRT on a SIGTERM that
        came while the model loaded."""
        thread = threading.Thread(target=self._warm, name="search-model")
        self._warming = thread
        thread.start()
        return thread

    def close(self) -> None:
        """Stop warming up (before the next step: loading, then running the model once)
        and wait for the step under way; call it before the process exits."""
        self._closing.set()
        thread = self._warming
        if thread is None or not thread.is_alive():
            return
        log.info(WAITS_FOR_WARM_UP)
        if thread.native_id is not None:  # finish at the process's priority, when allowed
            with contextlib.suppress(OSError):
                os.setpriority(
                    os.PRIO_PROCESS, thread.native_id, os.getpriority(os.PRIO_PROCESS, 0)
                )
        thread.join()

    def _warm(self) -> None:
        with contextlib.suppress(OSError):  # Linux: this thread alone yields to the rest
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WARM_NICENESS)
        try:
            if self._closing.is_set():
                return
            model = self.model()
            if not self._closing.is_set():
                model.embed_batch(["warm"])
        except BadQuery:
            pass  # ``problem`` says why; each semantic search says it again
        except Exception:  # a background thread's failure goes to the log, not nowhere
            log.exception("the search model did not warm up")

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


def import_libraries() -> None:
    """Import the model's libraries (sentence-transformers, PyTorch) in this thread, to
    the end. The dashboard does it before it serves: a module half imported is visible
    to every thread, and scipy's array checks read ``sys.modules["torch"]``, so a
    statistics page computed while the warming thread imported PyTorch failed
    (``AttributeError: partially initialized module 'torch'``, HTTP 500 on the compare
    page under load). Nothing to import when the model starts without them (its ONNX
    export kept: ``starts_without_torch``, the usual case once the embedder has
    started or `contreact-embedder --prepare` ran), nor without the embedder installed."""
    with contextlib.suppress(ImportError):
        from contreact_embedder.embedding_service import starts_without_torch

        if not starts_without_torch():
            import sentence_transformers  # noqa: F401


def _load() -> Model:
    """The embedder's model, or BadQuery saying why not and what to do."""
    try:
        from contreact_embedder.embedding_service import query_model
        from contreact_embedder.exceptions import ModelUnavailable
    except ImportError:
        raise BadQuery(
            "semantic search embeds the query with the embedder's model, which is not "
            "installed with this dashboard: install it with `pip install "
            "'contreact[services]'`, or search by keyword"
        ) from None
    try:
        return query_model()
    except ModelUnavailable as exc:
        raise BadQuery(f"semantic search cannot load its model: {exc}") from None
