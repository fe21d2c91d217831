"""Exact nearest-neighbour search over embedding vectors, in memory, with numpy.

The paragraph repetition corpus (seed 001) and the semantic search and dedup of
seed 004 need "the stored chunks most similar to this vector, within one run or
one experiment". Corpora hold thousands to a few hundred thousand 384-d vectors,
where an exact scan is both fast and free of the recall loss of an approximate
index, so this is a plain scan, no ANN structure:

- Each scope (a run id, an experiment id: the caller's choice) has its own shard:
  a contiguous float32 matrix of unit vectors that grows by doubling. A search in
  one scope is one matrix-vector product over that scope's rows only, then
  ``argpartition`` for the top candidates; other scopes cost nothing.
- Candidates are then rescored with the exactly rounded cosine of
  ``contreact_events.diversity.similarity.cosine`` (float64 products, ``math.fsum``), between
  the query as given and the stored unit vector. Reported scores are therefore the
  same on every machine and at the exact thresholds of the seeds; the float32 scan
  only chooses the candidates (with a margin, so near-ties are not lost).
- Vectors are normalized when added; a zero vector is stored as zeros and scores 0
  against everything (as a zero query does).

The index is a projection: the vectors live in the run log, and the index is
rebuilt from it. It is not thread-safe; one owner mutates it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
VectorLike = Sequence[float] | npt.NDArray[np.floating]
T = TypeVar("T")

_INITIAL_CAPACITY = 64
_CANDIDATE_MARGIN = 8
"""Extra float32 candidates rescored exactly, so that ties within float32 rounding
cannot push a true top-k chunk out."""
_FLOAT32_SLACK = 1e-4
"""How far below the k-th score or ``min_score`` a float32 score may be and still be
rescored exactly (float32 error of a 384-d unit dot product is below 2.5e-5)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result."""

    id: str
    score: float
    """True cosine similarity between query and stored vector, in [-1, 1]."""
    text: str
    metadata: Mapping[str, str]


@dataclass(eq=False)
class _Shard:
    """One scope's rows. Row ``i`` of ``matrix`` belongs to ``ids[i]``."""

    dim: int
    matrix: F32 = field(init=False)
    size: int = 0
    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((_INITIAL_CAPACITY, self.dim), dtype=np.float32)

    def reserve(self, extra: int) -> None:
        needed = self.size + extra
        if needed <= self.matrix.shape[0]:
            return
        capacity = self.matrix.shape[0]
        while capacity < needed:
            capacity *= 2
        grown = np.zeros((capacity, self.dim), dtype=np.float32)
        grown[: self.size] = self.matrix[: self.size]
        self.matrix = grown

    def put(self, id_: str, unit: F32, text: str, metadata: dict[str, str]) -> None:
        row = self.rows.get(id_)
        if row is None:
            row = self.size
            self.reserve(1)
            self.size += 1
            self.rows[id_] = row
            self.ids.append(id_)
            self.texts.append(text)
            self.metadata.append(metadata)
        else:
            self.texts[row] = text
            self.metadata[row] = metadata
        self.matrix[row] = unit

    def view(self) -> F32:
        return self.matrix[: self.size]


def _as_matrix(vectors: Sequence[VectorLike] | npt.NDArray[np.floating]) -> F64:
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1) if matrix.size else matrix.reshape(0, 0)
    if matrix.ndim != 2:
        raise ValueError(f"expected a list of vectors, got an array of shape {matrix.shape}")
    return matrix


def normalize_rows(matrix: F64) -> F32:
    """Unit-length rows as float32 (norms taken in float64); zero rows stay zero."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    safe = np.where(norms == 0.0, 1.0, norms)
    unit: F32 = (matrix / safe[:, None]).astype(np.float32)
    return unit


def exact_cosine(query: F64, query_norm: float, stored: F64) -> float:
    """Bit-for-bit ``contreact_events.diversity.similarity.cosine(query, stored)``: float64
    products (IEEE, the same as Python's), exactly rounded sums, then the division."""
    dot = math.fsum((query * stored).tolist())
    norm = query_norm * math.sqrt(math.fsum((stored * stored).tolist()))
    if norm == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / norm))


def _candidates(
    stored: F32, units: F32, k: int, min_score: float | None
) -> list[list[tuple[float, int]]]:
    """Per query, ``(float32 score, row)`` of the rows the float32 scan places in
    the top ``k + margin`` (scoring at least ``min_score`` minus the float32 slack).
    One BLAS product for all queries; with ``min_score`` one vectorized comparison
    first, so usually few rows remain."""
    if units.shape[0] == 1:
        scores = (stored @ units[0]).reshape(1, -1)  # gemv: faster than gemm for one
    else:
        scores = np.ascontiguousarray((stored @ units.T).T)  # (queries, rows)
    out: list[list[tuple[float, int]]] = []
    for qi in range(units.shape[0]):
        if min_score is None:
            pool_scores = scores[qi]
            pool = None
        else:
            pool = np.flatnonzero(scores[qi] >= min_score - _FLOAT32_SLACK)
            pool_scores = scores[qi, pool]
        take = min(pool_scores.size, k + _CANDIDATE_MARGIN)
        if take < pool_scores.size:
            keep = np.argpartition(-pool_scores, take - 1)[:take]
            pool = keep if pool is None else pool[keep]
            pool_scores = pool_scores[keep]
        elif pool is None:
            pool = np.arange(pool_scores.size)
        out.append(list(zip(pool_scores.tolist(), pool.tolist(), strict=True)))
    return out


class VectorIndex:
    """Exact cosine search over (id, vector, scope, metadata, text) entries.

    Ids are unique within a scope; adding an id again to the same scope replaces its
    entry (so a redelivered "store this chunk" task changes nothing)."""

    def __init__(self, dim: int | None = None) -> None:
        self._dim = dim
        self._shards: dict[str, _Shard] = {}

    @property
    def dim(self) -> int | None:
        """The vectors' dimension: given, or fixed by the first vector added."""
        return self._dim

    def _check_dim(self, dim: int) -> int:
        if self._dim is None:
            if dim == 0:
                raise ValueError("vectors must have at least one component")
            self._dim = dim
        elif dim != self._dim:
            raise ValueError(f"vector has {dim} components, the index holds {self._dim}-d vectors")
        return self._dim

    def add(
        self,
        id: str,
        vector: VectorLike,
        *,
        scope: str,
        text: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Store one vector (normalized here) under ``id`` in ``scope``."""
        self.add_many([id], [vector], scope=scope, texts=[text], metadatas=[metadata or {}])

    def add_many(
        self,
        ids: Sequence[str],
        vectors: Sequence[VectorLike] | npt.NDArray[np.floating],
        *,
        scope: str,
        texts: Sequence[str] | None = None,
        metadatas: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        """Store many vectors in one scope; texts and metadatas are parallel to ids."""
        matrix = _as_matrix(vectors)
        n = len(ids)
        if matrix.shape[0] != n:
            raise ValueError(f"{n} ids but {matrix.shape[0]} vectors")
        if texts is not None and len(texts) != n:
            raise ValueError(f"{n} ids but {len(texts)} texts")
        if metadatas is not None and len(metadatas) != n:
            raise ValueError(f"{n} ids but {len(metadatas)} metadatas")
        if n == 0:
            return
        dim = self._check_dim(matrix.shape[1])
        units = normalize_rows(matrix)
        shard = self._shards.get(scope)
        if shard is None:
            shard = self._shards[scope] = _Shard(dim)
        shard.reserve(n)
        for i, id_ in enumerate(ids):
            text = texts[i] if texts is not None else ""
            meta = dict(metadatas[i]) if metadatas is not None else {}
            shard.put(id_, units[i], text, meta)

    def search(
        self,
        vector: VectorLike,
        k: int = 5,
        scope: str | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The ``k`` stored vectors most similar to ``vector`` (best first; ties in
        insertion order), in ``scope`` or in every scope; only those scoring at least
        ``min_score`` when given."""
        return self.search_many([vector], k=k, scope=scope, min_score=min_score)[0]

    def search_many(
        self,
        vectors: Sequence[VectorLike] | npt.NDArray[np.floating],
        k: int = 5,
        scope: str | None = None,
        min_score: float | None = None,
    ) -> list[list[Hit]]:
        """``search`` for several queries at once: one matrix product per shard."""
        queries = _as_matrix(vectors)
        if queries.shape[0] == 0:
            return []
        if k <= 0:
            return [[] for _ in range(queries.shape[0])]
        if self._dim is not None and queries.shape[1] != self._dim:
            raise ValueError(
                f"query has {queries.shape[1]} components, the index holds {self._dim}-d vectors"
            )
        shards = self._scoped(scope)
        units = normalize_rows(queries)
        query_norms = [math.sqrt(math.fsum((q * q).tolist())) for q in queries]
        # Float32 candidates of every shard first, then one exact rescoring of those
        # that float32 rounding could place in the overall top k.
        pooled: list[list[tuple[float, int, int]]] = [[] for _ in range(queries.shape[0])]
        for order, shard in enumerate(shards):
            if shard.size == 0:
                continue
            for qi, cands in enumerate(_candidates(shard.view(), units, k, min_score)):
                pooled[qi].extend((score, order, row) for score, row in cands)
        found: list[list[tuple[float, int, int]]] = [[] for _ in range(queries.shape[0])]
        for qi, pool in enumerate(pooled):
            if not pool:
                continue
            approx = sorted((c[0] for c in pool), reverse=True)
            floor = approx[min(k, len(approx)) - 1] - _FLOAT32_SLACK
            for approx_score, order, row in pool:
                if approx_score < floor:
                    continue
                stored_row = shards[order].matrix[row].astype(np.float64)
                exact = exact_cosine(queries[qi], query_norms[qi], stored_row)
                if min_score is None or exact >= min_score:
                    found[qi].append((exact, order, row))
        results = []
        for per_query in found:
            per_query.sort(key=lambda t: (-t[0], t[1], t[2]))
            results.append(
                [
                    Hit(
                        shards[order].ids[row],
                        score,
                        shards[order].texts[row],
                        dict(shards[order].metadata[row]),
                    )
                    for score, order, row in per_query[:k]
                ]
            )
        return results

    def _scoped(self, scope: str | None) -> list[_Shard]:
        if scope is None:
            return list(self._shards.values())
        shard = self._shards.get(scope)
        return [shard] if shard is not None else []

    def count(self, scope: str | None = None) -> int:
        """Entries in ``scope``, or in every scope."""
        return sum(shard.size for shard in self._scoped(scope))

    def scopes(self) -> list[str]:
        """Scopes holding at least one entry, in the order they were created."""
        return [name for name, shard in self._shards.items() if shard.size]

    def clear(self, scope: str) -> int:
        """Drop every entry of ``scope`` (seed 001's ``clear_session``); returns how
        many there were. Other scopes are untouched."""
        shard = self._shards.pop(scope, None)
        return shard.size if shard is not None else 0

    def stats(self, scope: str | None = None) -> dict[str, int]:
        """``chunks``: entries; ``documents``: distinct ``parent_id`` metadata values
        (entries without one are not counted); ``runs``: distinct ``run_id`` values."""
        shards = self._scoped(scope)
        parents = {m["parent_id"] for s in shards for m in s.metadata if "parent_id" in m}
        runs = {m["run_id"] for s in shards for m in s.metadata if "run_id" in m}
        return {
            "chunks": sum(s.size for s in shards),
            "documents": len(parents),
            "runs": len(runs),
        }


def dedup(
    texts_vectors: Iterable[tuple[T, VectorLike]], threshold: float = 0.9
) -> list[tuple[T, VectorLike]]:
    """Seed 004's semantic dedup, in order: an item is kept unless its cosine with an
    item already kept is at least ``threshold`` (the seed keeps an item when the
    nearest distance is ``> 1 - threshold``, i.e. the similarity ``< threshold``).
    So the first of a group of near-duplicates stays. Exact cosine, as in search."""
    kept: list[tuple[T, VectorLike]] = []
    kept_vectors: list[F64] = []
    kept_units: F32 | None = None
    for item, vector in texts_vectors:
        query = np.asarray(vector, dtype=np.float64).reshape(-1)
        if kept_units is not None:
            approx = kept_units @ normalize_rows(query.reshape(1, -1))[0]
            near = np.nonzero(approx >= threshold - _FLOAT32_SLACK)[0].tolist()
            norm = math.sqrt(math.fsum((query * query).tolist()))
            if any(exact_cosine(query, norm, kept_vectors[i]) >= threshold for i in near):
                continue
        kept.append((item, vector))
        kept_vectors.append(query)
        row = normalize_rows(query.reshape(1, -1))
        kept_units = row if kept_units is None else np.vstack([kept_units, row])
    return kept
