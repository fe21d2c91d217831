"""The exact vector index: search against brute-force numpy, scopes, clear, stats,
exact-cosine scores, and seed 004's dedup at 0.9."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contreact_events.diversity.similarity import cosine
from contreact_events.diversity.vector_index import VectorIndex, dedup, exact_cosine


def _random_index(n: int, dim: int = 32, seed: int = 7) -> tuple[VectorIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim))
    index = VectorIndex()
    index.add_many([f"c{i}" for i in range(n)], vectors, scope="run-a")
    return index, vectors


def _brute_force(vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    unit = vectors / np.linalg.norm(vectors, axis=1)[:, None]
    scores = unit @ (query / np.linalg.norm(query))
    return [f"c{i}" for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.mark.parametrize("n", [3, 100, 5000])
def test_top_k_ids_equal_brute_force(n: int) -> None:
    index, vectors = _random_index(n)
    rng = np.random.default_rng(99)
    for _ in range(20):
        query = rng.normal(size=(vectors.shape[1],))
        hits = index.search(query, k=5, scope="run-a")
        assert [h.id for h in hits] == _brute_force(vectors, query, 5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_global_search_over_many_scopes_equals_brute_force() -> None:
    rng = np.random.default_rng(21)
    vectors = rng.normal(size=(2000, 16))
    index = VectorIndex()
    for r in range(50):
        rows = list(range(r, 2000, 50))
        index.add_many([f"c{i}" for i in rows], vectors[rows], scope=f"run-{r}")
    for _ in range(20):
        query = rng.normal(size=(16,))
        assert [h.id for h in index.search(query, k=5)] == _brute_force(vectors, query, 5)
        run_rows = list(range(7, 2000, 50))
        expected = [f"c{run_rows[int(i[1:])]}" for i in _brute_force(vectors[run_rows], query, 5)]
        assert [h.id for h in index.search(query, k=5, scope="run-7")] == expected


def test_scores_are_the_exact_cosine_of_similarity_module() -> None:
    index, vectors = _random_index(200)
    query = np.random.default_rng(3).normal(size=(vectors.shape[1],))
    stored = {f"c{i}": vectors[i] for i in range(len(vectors))}
    for hit in index.search(query, k=10):
        unit = stored[hit.id] / np.linalg.norm(stored[hit.id])
        expected = cosine(query.tolist(), unit.astype(np.float32).astype(np.float64).tolist())
        assert hit.score == expected  # bit for bit, not approximately
        assert hit.score == pytest.approx(float(unit @ query / np.linalg.norm(query)), abs=1e-6)


def test_exact_cosine_matches_similarity_cosine_on_random_data() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        a, b = rng.normal(size=384), rng.normal(size=384)
        norm = math.sqrt(math.fsum((a * a).tolist()))
        assert exact_cosine(a, norm, b) == cosine(a.tolist(), b.tolist())


def test_search_many_equals_single_searches() -> None:
    index, vectors = _random_index(500)
    queries = np.random.default_rng(5).normal(size=(7, vectors.shape[1]))
    batched = index.search_many(queries, k=4)
    assert batched == [index.search(q, k=4) for q in queries]


def test_vectors_are_normalized_on_add_and_zero_vectors_score_zero() -> None:
    index = VectorIndex()
    index.add("long", [10.0, 0.0], scope="s", text="long one")
    index.add("zero", [0.0, 0.0], scope="s")
    hits = index.search([3.0, 0.0], k=5, scope="s")
    assert [(h.id, h.score) for h in hits] == [("long", 1.0), ("zero", 0.0)]
    assert hits[0].text == "long one"
    assert [h.score for h in index.search([0.0, 0.0], k=5)] == [0.0, 0.0]


def test_min_score_is_inclusive() -> None:
    index = VectorIndex()
    index.add("x", [1.0, 0.0], scope="s")
    y = math.sqrt(1 - 0.85**2)
    score = cosine([0.85, y], [1.0, 0.0])
    assert score == 0.85
    assert [h.id for h in index.search([0.85, y], min_score=0.85)] == ["x"]
    assert index.search([0.85, y], min_score=float(np.nextafter(0.85, 1.0))) == []


def test_scope_filtering_and_global_search() -> None:
    index = VectorIndex()
    index.add("a1", [1.0, 0.0, 0.0], scope="run-a")
    index.add("b1", [0.9, 0.1, 0.0], scope="run-b")
    index.add("b2", [0.0, 1.0, 0.0], scope="run-b")
    assert [h.id for h in index.search([1.0, 0.0, 0.0], k=5, scope="run-b")] == ["b1", "b2"]
    assert [h.id for h in index.search([1.0, 0.0, 0.0], k=2)] == ["a1", "b1"]
    assert index.search([1.0, 0.0, 0.0], scope="nobody") == []
    assert index.count() == 3
    assert index.count("run-b") == 2
    assert index.scopes() == ["run-a", "run-b"]


def test_same_id_in_same_scope_replaces_and_in_other_scope_coexists() -> None:
    index = VectorIndex()
    index.add("c", [1.0, 0.0], scope="s", text="old")
    index.add("c", [0.0, 1.0], scope="s", text="new")
    index.add("c", [1.0, 0.0], scope="t", text="other")
    assert index.count("s") == 1
    (hit,) = index.search([0.0, 1.0], k=1, scope="s")
    assert (hit.id, hit.text, hit.score) == ("c", "new", 1.0)
    assert index.count() == 2


def test_clear_drops_only_that_scope() -> None:
    index = VectorIndex()
    index.add_many(["a", "b"], [[1.0, 0.0], [0.0, 1.0]], scope="run-a")
    index.add("c", [1.0, 0.0], scope="run-b")
    assert index.clear("run-a") == 2
    assert index.clear("run-a") == 0
    assert index.count("run-a") == 0
    assert index.scopes() == ["run-b"]
    assert [h.id for h in index.search([1.0, 0.0])] == ["c"]


def test_stats_counts_chunks_documents_and_runs() -> None:
    index = VectorIndex()
    metas = [
        {"parent_id": "doc1", "run_id": "r1"},
        {"parent_id": "doc1", "run_id": "r1"},
        {"parent_id": "doc2", "run_id": "r2"},
        {},
    ]
    index.add_many(["1", "2", "3", "4"], np.eye(4), scope="exp", metadatas=metas)
    index.add("5", [1.0, 0.0, 0.0, 0.0], scope="other", metadata={"parent_id": "doc9"})
    assert index.stats("exp") == {"chunks": 4, "documents": 2, "runs": 2}
    assert index.stats() == {"chunks": 5, "documents": 3, "runs": 2}
    assert index.stats("none") == {"chunks": 0, "documents": 0, "runs": 0}


def test_metadata_is_copied_in_and_out() -> None:
    index = VectorIndex()
    meta = {"run_id": "r1"}
    index.add("x", [1.0], scope="s", metadata=meta)
    meta["run_id"] = "changed"
    hit = index.search([1.0])[0]
    assert hit.metadata == {"run_id": "r1"}


def test_growth_past_the_initial_capacity_keeps_every_row() -> None:
    index, vectors = _random_index(1000, dim=8)
    for i in (0, 63, 64, 65, 999):
        (hit,) = index.search(vectors[i], k=1)
        assert hit.id == f"c{i}"
        assert hit.score == pytest.approx(1.0, abs=1e-6)


def test_dimension_mismatch_and_length_mismatch_are_refused() -> None:
    index = VectorIndex()
    index.add("a", [1.0, 0.0], scope="s")
    with pytest.raises(ValueError, match="3 components"):
        index.add("b", [1.0, 0.0, 0.0], scope="s")
    with pytest.raises(ValueError, match="3 components"):
        index.search([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="2 ids but 1 vectors"):
        index.add_many(["x", "y"], [[1.0, 0.0]], scope="s")


def _at(cos: float) -> list[float]:
    """A 2-d vector whose exact cosine with [1, 0] is ``cos`` to the last bit (the
    second component nudged by a few ulps until the norm rounds to exactly 1)."""
    base = math.sqrt(1 - cos * cos)
    down, up = base, base
    for _ in range(64):
        for y in (down, up):
            if cosine([cos, y], [1.0, 0.0]) == cos:
                return [cos, y]
        down, up = float(np.nextafter(down, 0.0)), float(np.nextafter(up, 1.0))
    raise AssertionError(f"no 2-d vector with cosine exactly {cos!r}")


def test_dedup_keeps_the_first_of_a_near_duplicate_group_at_exactly_0_9() -> None:
    assert cosine(_at(0.9), [1.0, 0.0]) == 0.9
    below = float(np.nextafter(0.9, 0.0))
    items = [
        ("first", [1.0, 0.0]),
        ("exactly 0.9", _at(0.9)),
        ("just below", _at(below)),
        ("orthogonal", [0.0, 1.0]),
    ]
    assert cosine(items[2][1], [1.0, 0.0]) == below
    kept = [name for name, _ in dedup(items, threshold=0.9)]
    assert kept == ["first", "just below", "orthogonal"]


def test_dedup_keeps_distinct_items_in_order() -> None:
    items = [("a", [1.0, 0.0, 0.0]), ("b", [0.0, 1.0, 0.0]), ("a again", [2.0, 0.0, 0.0])]
    assert [name for name, _ in dedup(items)] == ["a", "b"]
    assert dedup([]) == []
