"""The embedder's runtimes with the real all-MiniLM-L6-v2: the ``onnx`` runtime's
vectors agree with PyTorch's within 1e-4 cosine on a fixed corpus; its export is made
offline from the shipped weights, once, and reused; a broken or disagreeing export,
a missing ``onnxruntime`` and an unknown runtime are refused, naming the fix; old
events read as made by ``torch``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from pydantic import ValidationError

from bench.services.similarity_search import stdlib_sentences, thousand_word_text
from contreact_embedder.embedding_service import AGREEMENT, EmbeddingService
from contreact_embedder.exceptions import ModelUnavailable
from contreact_embedder.onnx_runtime import (
    ROWS_PER_RUN,
    OnnxEncoder,
    deal,
    export_key,
    group_by_length,
    run_cost,
)
from contreact_embedder.settings import EmbedderSettings
from contreact_embedder.tokens import Tokenizer
from contreact_events.catalog.diversity import ParagraphsChecked, ReflectionEmbedded
from contreact_events.diversity.paragraphs import split_paragraphs
from contreact_events.wire.codec import event_from_json

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module")
def torch_service() -> EmbeddingService:
    return EmbeddingService(runtime="torch")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[EmbeddingService, Path]:
    """An ``onnx`` service whose export was made into a fresh cache by this test."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    return EmbeddingService(runtime="onnx", cache_dir=cache), cache


def fixed_corpus() -> list[str]:
    """400 stdlib sentences, the benchmark's 1,000-word text's paragraphs, and edge
    cases: empty, one word, past the model's 256 tokens, non-ASCII."""
    sentences = stdlib_sentences(460)
    paragraphs = split_paragraphs(thousand_word_text(sentences[400:], sentences[:400]))
    edges = [
        "",
        "memory",
        " ".join(["memory"] * 254),
        " ".join(["memory"] * 255),
        " ".join(f"reflection{i} on curiosity" for i in range(400)),
        "Ich dachte über Erinnerung nach — 记忆 and ✨ emoji.",
    ]
    return [*sentences[:400], *paragraphs, *edges]


def test_onnx_vectors_agree_with_torch_within_1e4_cosine_on_a_fixed_corpus(
    torch_service: EmbeddingService, exported: tuple[EmbeddingService, Path]
) -> None:
    onnx_service, _ = exported
    texts = fixed_corpus()
    reference = torch_service.embed_batch(texts)
    ours = onnx_service.embed_batch(texts)
    distances = [
        1.0 - float(np.dot(a.vector, b.vector)) for a, b in zip(reference, ours, strict=True)
    ]
    assert max(distances) <= AGREEMENT == 1e-4
    assert [e.truncated for e in ours] == [e.truncated for e in reference]
    assert sum(e.truncated for e in ours) == 2
    # Alone, in a batch of one, it agrees too (no padding at all).
    for text in texts[400:]:
        alone = onnx_service.embed(text)
        assert 1.0 - float(np.dot(alone.vector, torch_service.embed(text).vector)) <= AGREEMENT
    assert (onnx_service.runtime, torch_service.runtime) == ("onnx", "torch")


def test_the_export_is_made_once_and_reused(exported: tuple[EmbeddingService, Path]) -> None:
    service, cache = exported
    files = list(cache.glob("*/model.onnx"))
    assert len(files) == 1
    assert files[0].parent.name == export_key(service.path)
    made = files[0].stat().st_mtime_ns
    again = EmbeddingService(runtime="onnx", cache_dir=cache)
    assert files[0].stat().st_mtime_ns == made
    assert list(cache.glob("*/model.onnx")) == files
    assert not list(cache.glob("*/.export-*"))  # no scratch left behind
    np.testing.assert_allclose(again.embed("a plan").vector, service.embed("a plan").vector)


def test_the_files_hash_is_kept_and_hashed_again_once_a_file_is_replaced(
    tmp_path: Path,
) -> None:
    """The export's key is reused from its stamp while the model's files are the ones
    hashed; a file replaced since (even with its size and mtime kept) is read again."""
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 384}')
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    weights = model / "model.safetensors"
    weights.write_bytes(b"weights-A" * 1000)
    cache = tmp_path / "cache"
    key = export_key(model, cache)
    assert key == export_key(model)  # the stamp only keeps the full hash
    stamps = list((cache / "stamps").glob("*.json"))
    assert len(stamps) == 1
    kept = orjson.loads(stamps[0].read_bytes())
    assert kept["key"] == key and len(kept["files"]) == 3
    # Reused without reading: a stamp naming another key is believed while the
    # files' stamps match...
    stamps[0].write_bytes(orjson.dumps({**kept, "key": "0" * 24}))
    assert export_key(model, cache) == "0" * 24
    # ...and not once a file was replaced, same size, same mtime.
    before = weights.stat()
    replacement = model / "replacement"
    replacement.write_bytes(b"weights-B" * 1000)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, weights)
    assert weights.stat().st_size == before.st_size
    assert weights.stat().st_mtime_ns == before.st_mtime_ns
    changed = export_key(model, cache)
    assert changed == export_key(model) != key
    assert orjson.loads(stamps[0].read_bytes())["key"] == changed
    # A stamp that is not JSON, or names no key, is hashed over.
    stamps[0].write_text("{not json")
    assert export_key(model, cache) == changed
    stamps[0].write_bytes(orjson.dumps({**kept, "key": "../../elsewhere"}))
    assert export_key(model, cache) == changed


def test_a_corrupt_export_is_refused_naming_the_fix(
    exported: tuple[EmbeddingService, Path], tmp_path: Path
) -> None:
    service, _ = exported
    broken = tmp_path / export_key(service.path)
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(ModelUnavailable, match="Delete that directory"):
        EmbeddingService(runtime="onnx", cache_dir=tmp_path)


def test_an_export_whose_vectors_disagree_is_refused(
    exported: tuple[EmbeddingService, Path], tmp_path: Path
) -> None:
    """The check on load breaks on purpose: the same graph with one weight matrix
    perturbed loads fine, but its vectors drift past 1e-4."""
    import onnx
    from onnx import numpy_helper

    service, cache = exported
    graph = onnx.load(str(next(cache.glob("*/model.onnx"))))
    largest = max(graph.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    values = numpy_helper.to_array(largest).copy()
    values += np.random.default_rng(0).normal(0.0, 0.05, values.shape).astype(values.dtype)
    largest.CopyFrom(numpy_helper.from_array(values, largest.name))
    stale = tmp_path / export_key(service.path)
    stale.mkdir()
    onnx.save(graph, str(stale / "model.onnx"))
    with pytest.raises(ModelUnavailable, match=r"differ from PyTorch's .* broken or stale"):
        EmbeddingService(runtime="onnx", cache_dir=tmp_path)


def test_the_onnx_runtime_without_onnxruntime_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ModelUnavailable) as caught:
        EmbeddingService(runtime="onnx", cache_dir=tmp_path)
    message = str(caught.value)
    assert "onnxruntime is not installed" in message
    assert "pip install onnxruntime onnx" in message
    assert "CONTREACT_EMBED_RUNTIME=torch" in message
    assert not list(tmp_path.iterdir())  # refused before loading or exporting anything


def test_an_unknown_runtime_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelUnavailable, match="unknown embedding runtime 'tensorflow'"):
        EmbeddingService(runtime="tensorflow")  # type: ignore[arg-type]
    monkeypatch.setenv("CONTREACT_EMBED_RUNTIME", "tensorflow")
    with pytest.raises(ValidationError, match="'torch' or 'onnx'"):
        EmbedderSettings()


def test_the_settings_choose_the_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert EmbedderSettings().runtime == "onnx"
    assert EmbedderSettings().cache_dir is None
    monkeypatch.setenv("CONTREACT_EMBED_RUNTIME", "torch")
    monkeypatch.setenv("CONTREACT_EMBED_CACHE_DIR", str(tmp_path))
    settings = EmbedderSettings()
    assert (settings.runtime, settings.cache_dir) == ("torch", tmp_path)


def test_texts_are_grouped_by_length_so_that_little_is_padded() -> None:
    lengths = [174, 157, 164, 32, 192, 181, 136, 42, 172, 138]
    groups = group_by_length(lengths, batch_size=32)
    assert sorted(i for group in groups for i in group) == list(range(10))
    # A paragraph check's paragraphs run alone: two of 136+ tokens pass ROWS_PER_RUN.
    assert groups == [[4], [5], [0], [8], [2], [1], [9], [6], [7], [3]]
    shorts = [20, 19, 18, 17, 30, 8]
    groups = group_by_length(shorts, batch_size=32)
    assert groups == [[4], [0, 1, 2, 3], [5]]  # within 15% of the group's longest
    for group in groups:
        assert all(0.85 * shorts[group[0]] <= shorts[i] <= shorts[group[0]] for i in group)
    assert group_by_length([100] * 5, batch_size=2) == [[0, 1], [2, 3], [4]]
    many = group_by_length([16] * 40, batch_size=32)
    assert [len(g) for g in many] == [16, 16, 8]  # 16 x 16 tokens = ROWS_PER_RUN
    assert ROWS_PER_RUN == 256
    assert group_by_length([], batch_size=32) == []


def test_groups_are_dealt_to_the_cores_when_that_beats_one_session_on_both() -> None:
    lengths = [174, 157, 164, 32, 192, 181, 136, 42, 172, 138]
    groups = [[i] for i in range(10)]
    costs = [run_cost(1, n) for n in lengths]
    shares = deal(groups, costs, workers=2)
    assert shares is not None and len(shares) == 2
    assert sorted(g[0] for share in shares for g in share) == list(range(10))
    loads = [sum(costs[g[0]] for g in share) for share in shares]
    assert max(loads) / sum(costs) < 0.51  # nearly half each
    assert deal(groups[:1], costs[:1], workers=2) is None  # a lone text: both threads on it
    assert deal(groups, costs, workers=1) is None
    # One long text and a short one: its core would take longer than both on it.
    assert deal([[0], [1]], [run_cost(1, 250), run_cost(1, 12)], workers=2) is None
    assert deal([[0], [1]], [run_cost(1, 100), run_cost(1, 100)], workers=2) == [[[0]], [[1]]]


def test_side_by_side_runs_give_the_vectors_of_one_session(
    exported: tuple[EmbeddingService, Path],
) -> None:
    """Texts dealt to two one-thread runs at once come back in their order, with the
    vectors one session makes of them (whatever the machine's cores)."""
    service, cache = exported
    path = next(cache.glob("*/model.onnx"))
    texts = fixed_corpus()[400:]
    ids = Tokenizer(service.path, service.max_seq_length).ids(texts)[0]
    alone = OnnxEncoder(path, workers=1)
    side_by_side = OnnxEncoder(path, workers=2)
    assert alone.solo is None and side_by_side.solo is not None
    groups = group_by_length([len(one) for one in ids], 32)
    assert deal(groups, [run_cost(len(g), len(ids[g[0]])) for g in groups], 2) is not None
    np.testing.assert_allclose(side_by_side.run(ids, 32), alone.run(ids, 32), atol=1e-6)
    np.testing.assert_allclose(side_by_side.run(ids[:1], 32), alone.run(ids[:1], 32), atol=1e-6)


def test_events_of_before_the_runtime_read_as_torch() -> None:
    """The recorded logs' embeddings (version 1, no ``runtime``) read as ``torch``."""
    kinds: dict[str, int] = {}
    for path in sorted(FIXTURES.glob("runlog-*.jsonl")):
        for line in path.read_bytes().splitlines():
            raw = orjson.loads(line)
            if raw.get("type") not in ("ReflectionEmbedded", "ParagraphsChecked"):
                continue
            if raw.get("schema_version", 1) > 1:  # a log saved since: it records its runtime
                assert raw["runtime"] in ("torch", "onnx")
                continue
            assert "runtime" not in raw
            event = event_from_json(line)
            assert isinstance(event, ReflectionEmbedded | ParagraphsChecked)
            assert (event.runtime, event.schema_version) == ("torch", 2)
            kinds[event.type] = kinds.get(event.type, 0) + 1
    assert set(kinds) == {"ReflectionEmbedded", "ParagraphsChecked"}


def test_the_service_process_refuses_an_unknown_runtime_without_a_traceback() -> None:
    env = {**os.environ, "CONTREACT_EMBED_RUNTIME": "cuda"}
    done = subprocess.run(
        [sys.executable, "-m", "contreact_embedder", "--prepare"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "contreact-embedder: bad setting" in done.stderr
    assert "'torch' or 'onnx'" in done.stderr
    assert "Traceback" not in done.stderr
