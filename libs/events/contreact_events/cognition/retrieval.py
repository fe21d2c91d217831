"""Hybrid retrieval, pure: the one ranking behind ``search_memory`` and the cognition
analysis' relevant memories (seed 002, "embeddings + keyword matching + recency").

Each candidate (a memory value, a reflection) is scored three ways, and every score is
returned with the result:

- ``cosine``: the exact cosine of the query's vector and the candidate's
  (``diversity.similarity.cosine``: the same on every machine), so "car" finds
  "automobile". ``None`` when the query has no vector (the heuristic analyser may be
  called without one); the other two weights are then rescaled to sum to what the
  three did.
- ``keyword``: the share of the query's content words (stop words dropped, Snowball
  stems, so "running" matches "runs") that the candidate contains, each word weighted by
  its inverse document frequency over the candidates (BM25's idf,
  ``ln(1 + (N - df + 0.5) / (df + 0.5))``), out of the query's words that some candidate
  has (a word no candidate has tells them nothing apart, and would only dilute the
  score): a rare word the query shares with one memory counts more than a common one,
  which is how a name or a code the embedding model blurs is still found. In [0, 1].
- ``recency``: ``0.5 ** (age / half_life)``, the age taken at ``now`` (the caller's
  reference time: ``search_memory`` takes the newest event of the log it searched, so the
  same log gives the same ranking). In (0, 1].

``combined = w_cos * max(cosine, 0) + w_kw * keyword + w_rec * recency``. Results are
ordered by the combined score (compared at 12 decimals, so float noise does not decide),
then the newer candidate first, then by id: the order never depends on input order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from contreact_events.cognition.keywords import content_stems
from contreact_events.diversity.similarity import cosine

_DECIMALS = 12


@dataclass(frozen=True, slots=True)
class Candidate:
    """Something that may be retrieved. ``ts``: when it was written (timezone-aware)."""

    id: str
    text: str
    ts: datetime
    vector: Sequence[float] | None = None


@dataclass(frozen=True, slots=True)
class Weights:
    """How the three scores combine; ``half_life_s``: the age at which recency is 0.5."""

    cosine: float = 0.55
    keyword: float = 0.35
    recency: float = 0.10
    half_life_s: float = 3600.0

    def __post_init__(self) -> None:
        parts = (self.cosine, self.keyword, self.recency)
        if any(w < 0 or not math.isfinite(w) for w in parts) or sum(parts) <= 0:
            raise ValueError(
                f"retrieval weights must be finite, not negative and not all 0, got {parts}"
            )
        if not self.half_life_s > 0:
            raise ValueError(f"half_life_s must be above 0, got {self.half_life_s}")


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class Scored:
    """One ranked candidate with each of its scores."""

    id: str
    text: str
    ts: datetime
    cosine: float | None
    keyword: float
    recency: float
    combined: float
    shared_words: tuple[str, ...]
    """The query's stems this candidate contains, in the query's order."""


def rank(
    query_text: str,
    query_vector: Sequence[float] | None,
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    k: int | None = None,
    weights: Weights = DEFAULT_WEIGHTS,
) -> list[Scored]:
    """The candidates best first (all of them, or the first ``k``). With a query vector
    every candidate needs one (the scores would not be comparable otherwise)."""
    if query_vector is not None:
        missing = [c.id for c in candidates if c.vector is None]
        if missing:
            raise ValueError(
                f"candidates {missing[:3]} have no vector: embed them, or rank without "
                "a query vector"
            )
    w_cos, w_kw, w_rec = weights.cosine, weights.keyword, weights.recency
    if query_vector is None:
        total = w_cos + w_kw + w_rec
        rest = w_kw + w_rec
        w_cos = 0.0
        if rest > 0:
            w_kw, w_rec = w_kw * total / rest, w_rec * total / rest
    query = list(dict.fromkeys(content_stems(query_text)))
    stems = [frozenset(content_stems(c.text)) for c in candidates]
    idf = _idf(query, stems)
    query_mass = math.fsum(idf.values())
    scored = []
    for candidate, its_stems in zip(candidates, stems, strict=True):
        shared = tuple(s for s in query if s in its_stems)
        keyword = math.fsum(idf[s] for s in shared) / query_mass if query_mass > 0 else 0.0
        age = max(0.0, (now - candidate.ts).total_seconds())
        recency = 0.5 ** (age / weights.half_life_s)
        cos = None
        if query_vector is not None and candidate.vector is not None:
            cos = cosine(query_vector, candidate.vector)
        combined = w_cos * max(cos or 0.0, 0.0) + w_kw * keyword + w_rec * recency
        scored.append(
            Scored(
                candidate.id,
                candidate.text,
                candidate.ts,
                cos,
                keyword,
                recency,
                combined,
                shared,
            )
        )
    scored.sort(key=lambda s: (-round(s.combined, _DECIMALS), -s.ts.timestamp(), s.id))
    return scored if k is None else scored[: max(k, 0)]


def _idf(query: Sequence[str], stems: Sequence[frozenset[str]]) -> dict[str, float]:
    """BM25's idf of each query stem found in at least one candidate."""
    n = len(stems)
    out = {}
    for word in query:
        df = sum(1 for s in stems if word in s)
        if df:
            out[word] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return out
