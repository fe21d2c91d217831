"""The search page's embeddings (``contreact_ui/semantic.py``): logged vectors used as
they are, other texts embedded once and kept, and a search that would embed too many
new texts refused with a line saying how to narrow it."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from contreact_ui import semantic
from contreact_ui.exceptions import BadQuery
from contreact_ui.semantic import TextEmbedder
from tests.support.experiment_runs import ToyEmbedding, ToyModel
from tests.support.waits import HANG_GUARD_S


class Counting(ToyModel):
    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> list[ToyEmbedding]:
        self.embedded += texts
        return super().embed_batch(texts)


def test_texts_are_embedded_once_and_logged_vectors_kept() -> None:
    model = Counting()
    embedder = TextEmbedder(model)
    logged = np.ones(16, dtype=np.float32)
    vectors = embedder.fill(["a b", "c", "a b"], [None, logged, None], scope="narrow it")
    assert model.embedded == ["a b"]
    assert vectors[1] is logged and np.array_equal(vectors[0], vectors[2])
    embedder.fill(["a b"], [None], scope="narrow it")
    assert model.embedded == ["a b"]  # kept
    embedder.query("q")
    assert model.embedded == ["a b", "q"]


def test_too_many_new_texts_are_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "MAX_NEW_TEXTS", 2)
    model = Counting()
    with pytest.raises(BadQuery, match=r"would embed 3 texts .*: narrow it by run"):
        TextEmbedder(model).fill(["x", "y", "z"], [None] * 3, scope="narrow it by run")
    assert model.embedded == []


@pytest.mark.slow
def test_the_model_warms_in_the_background_and_loads_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dashboard warms the real model at start; a search that comes meanwhile waits
    for the same load (one load), and the page can say where it stands."""
    loads: list[object] = []
    real_load = semantic._load

    def counted() -> semantic.Model:
        loads.append(None)
        return real_load()

    monkeypatch.setattr(semantic, "_load", counted)
    embedder = TextEmbedder()
    before = embedder.state
    warming = embedder.warm()
    vector = embedder.query("the tides come back")  # during or after the load
    warming.join(timeout=600)  # a guard against a hang, not a bound on loading
    assert not warming.is_alive()
    assert before == "not loaded"
    assert embedder.state == "ready" and embedder.problem is None
    assert vector.shape == (384,) and len(loads) == 1


def test_a_model_that_cannot_load_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> semantic.Model:
        raise BadQuery("semantic search cannot load its model: no such directory")

    monkeypatch.setattr(semantic, "_load", missing)
    embedder = TextEmbedder()
    embedder.warm().join(timeout=60)
    assert embedder.state == "unavailable"
    assert embedder.problem == "semantic search cannot load its model: no such directory"
    with pytest.raises(BadQuery, match="cannot load its model"):
        embedder.query("q")  # each search says it again


def test_the_models_libraries_are_imported_whole_before_the_pages_are_served(
    tmp_path: Path,
) -> None:
    """A PyTorch half imported by the warming thread was visible to the page threads, and
    scipy's array checks failed on it (HTTP 500 on the compare page under load): the
    dashboard imports the libraries to the end before it serves (``main.serve``) when
    its model will need them (no ONNX export kept: here, an empty cache)."""
    import inspect
    import subprocess
    import sys

    from contreact_ui import main

    source = inspect.getsource(main.serve)
    assert source.index("import_libraries") < source.index(".warm()") < source.index("Server(")
    probe = (
        "import sys; from contreact_ui.semantic import import_libraries; "
        "assert 'torch' not in sys.modules; import_libraries(); "
        "print(hasattr(sys.modules['torch'], 'Tensor'))"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "True", done.stderr[-2000:]


def test_with_the_export_kept_the_search_model_loads_without_pytorch() -> None:
    """The usual case (the embedder has started, or `--prepare` ran): nothing to import
    before serving, and the model the warming thread loads is the onnx runtime's, which
    imports no PyTorch at all, so no page can meet a half-imported one."""
    import subprocess
    import sys

    from contreact_embedder.embedding_service import query_model

    assert query_model().runtime == "onnx"  # keeps the export and its check vectors
    probe = (
        "import sys; from contreact_ui.semantic import import_libraries, _load; "
        "import_libraries(); model = _load(); model.embed_batch(['warm']); "
        "print(model.runtime, sorted(m for m in ('torch', 'sentence_transformers') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "onnx []", done.stderr[-2000:]


class Held(ToyModel):
    """A model whose run waits until the test lets it go (a load still under way)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_batch(self, texts: Sequence[str]) -> list[ToyEmbedding]:
        self.entered.set()
        assert self.release.wait(timeout=HANG_GUARD_S)  # guards a hang only
        return super().embed_batch(texts)


def test_close_waits_for_the_warm_up_under_way() -> None:
    """A warm-up still in PyTorch when the interpreter finalizes aborts the process
    (SIGABRT on SIGTERM): the warming thread is no daemon, and ``close`` returns only
    once it has ended."""
    model = Held()
    embedder = TextEmbedder(model)
    warming = embedder.warm()
    assert not warming.daemon
    assert model.entered.wait(timeout=HANG_GUARD_S)
    closer = threading.Thread(target=embedder.close)
    closer.start()
    closer.join(timeout=0.2)  # it must not return while the model runs, however long
    assert closer.is_alive() and warming.is_alive()
    model.release.set()
    closer.join(timeout=HANG_GUARD_S)
    assert not closer.is_alive() and not warming.is_alive()


def test_a_closed_embedder_does_not_start_warming(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[object] = []

    def load() -> Counting:
        loads.append(None)
        return Counting()

    monkeypatch.setattr(semantic, "_load", load)
    embedder = TextEmbedder()
    embedder.close()
    embedder.warm().join(timeout=HANG_GUARD_S)
    assert loads == [] and embedder.state == "not loaded"
