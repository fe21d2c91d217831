"""The ``onnx`` runtime without PyTorch: its tokens are transformers' own (the fast
tokenizer sentence-transformers uses), cut where sentence-transformers cuts, on a fixed
corpus and on generated text; PyTorch's check vectors are kept beside the export, so a
second start imports neither PyTorch nor sentence-transformers; a kept reference that
the export disagrees with, or one made for other texts, is not believed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contreact_embedder.embedding_service import (
    SELF_CHECK_TEXTS,
    EmbeddingService,
    default_model_path,
    starts_without_torch,
)
from contreact_embedder.exceptions import ModelUnavailable
from contreact_embedder.onnx_runtime import REFERENCE, kept_reference
from contreact_embedder.tokens import Tokenizer, max_seq_length
from tests.unit.test_embedding_runtimes import fixed_corpus

pytestmark = pytest.mark.slow

LIMIT = 256


@pytest.fixture(scope="module")
def theirs() -> object:
    """transformers' fast tokenizer of the model, as sentence-transformers loads it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)


@pytest.fixture(scope="module")
def ours() -> Tokenizer:
    return Tokenizer(default_model_path(), max_seq_length(default_model_path()))


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float]]:
    """A cache the first start exported into (with PyTorch's check vectors), and its
    vector of one text."""
    cache = tmp_path_factory.mktemp("made")
    service = EmbeddingService(runtime="onnx", cache_dir=cache)
    return cache, service.embed("a plan").as_floats()


def copy_of(made: tuple[Path, list[float]], tmp_path: Path) -> Path:
    """The made export in a cache of this test's (no need to export again)."""
    cache = tmp_path / "cache"
    shutil.copytree(made[0], cache)
    return cache


def their_ids(theirs: object, texts: list[str], limit: int | None) -> list[list[int]]:
    cut = {"truncation": True, "max_length": limit} if limit is not None else {}
    return [list(one) for one in theirs(texts, add_special_tokens=True, **cut)["input_ids"]]  # type: ignore[operator]


def test_the_limit_is_the_models() -> None:
    assert max_seq_length(default_model_path()) == LIMIT


def test_the_tokens_are_transformers_own_cut_and_uncut_on_a_fixed_corpus(
    theirs: object, ours: Tokenizer
) -> None:
    texts = fixed_corpus()
    ids, truncated = ours.ids(texts)
    assert ids == their_ids(theirs, texts, LIMIT)
    uncut = their_ids(theirs, texts, None)
    assert truncated == [len(one) > LIMIT for one in uncut]
    assert sum(truncated) == 2  # the corpus holds two texts past the limit
    assert [ours.count(text) for text in texts] == [len(one) for one in uncut]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=0, max_size=1_500),
        min_size=1,
        max_size=4,
    )
)
def test_the_tokens_are_transformers_own_on_generated_text(
    theirs: object, ours: Tokenizer, texts: list[str]
) -> None:
    """Any Unicode (control characters, accents, CJK, whitespace runs), short and
    past the limit."""
    ids, truncated = ours.ids(texts)
    assert ids == their_ids(theirs, texts, LIMIT)
    assert truncated == [len(one) > LIMIT for one in their_ids(theirs, texts, None)]


def test_a_start_with_its_export_kept_imports_no_pytorch(
    made: tuple[Path, list[float]],
) -> None:
    """The first start exports and keeps PyTorch's check vectors; the next, in a
    process of its own, loads neither PyTorch nor sentence-transformers, and gives
    the first start's vectors."""
    cache, vector = made
    (export,) = cache.glob("*/model.onnx")
    assert kept_reference(export.parent, SELF_CHECK_TEXTS) is not None
    # The start's check covers the cut too (a text past the model's 256 tokens).
    assert any(Tokenizer(default_model_path(), LIMIT).ids(SELF_CHECK_TEXTS)[1])
    assert starts_without_torch(cache_dir=cache)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from contreact_embedder.embedding_service import EmbeddingService\n"
        f"service = EmbeddingService(runtime='onnx', cache_dir=Path({str(cache)!r}))\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules)\n"
        "print(json.dumps({'heavy': heavy, 'vector': service.embed('a plan').as_floats()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    second = json.loads(done.stdout)
    assert second["heavy"] == []
    np.testing.assert_allclose(second["vector"], vector, atol=1e-6)


def test_a_kept_reference_the_export_disagrees_with_is_refused(
    made: tuple[Path, list[float]], tmp_path: Path
) -> None:
    """PyTorch's kept vectors turned around (as if the export had been swapped for
    another model's): the start refuses, naming the fix."""
    cache = copy_of(made, tmp_path)
    (reference,) = cache.glob(f"*/{REFERENCE}")
    kept = json.loads(reference.read_text())
    kept["vectors"] = [list(reversed(row)) for row in kept["vectors"]]
    reference.write_text(json.dumps(kept))
    with pytest.raises(ModelUnavailable, match=r"differ from PyTorch's .* broken or stale"):
        EmbeddingService(runtime="onnx", cache_dir=cache)


def test_a_reference_for_other_texts_or_unreadable_is_made_again(
    made: tuple[Path, list[float]], tmp_path: Path
) -> None:
    cache = copy_of(made, tmp_path)
    (reference,) = cache.glob(f"*/{REFERENCE}")
    good = json.loads(reference.read_text())
    for bad in ({**good, "texts": ["other"]}, {"vectors": "x"}, None):
        reference.write_text("{not json" if bad is None else json.dumps(bad))
        assert kept_reference(reference.parent, SELF_CHECK_TEXTS) is None
        assert not starts_without_torch(cache_dir=cache)
        EmbeddingService(runtime="onnx", cache_dir=cache)  # PyTorch's, made again
        assert json.loads(reference.read_text())["texts"] == good["texts"]
        again = kept_reference(reference.parent, SELF_CHECK_TEXTS)
        assert again is not None
        np.testing.assert_allclose(again, good["vectors"], atol=1e-6)


def test_a_model_without_a_fast_tokenizer_is_refused_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(
        ModelUnavailable, match=r"no tokenizer.json .* CONTREACT_EMBED_RUNTIME=torch"
    ):
        Tokenizer(tmp_path, LIMIT)
