"""Seed 000's SimilarityMonitor, pure: cosine similarity of a reflection's vector
against every earlier reflection of the run; the maximum decides.

> 0.8 (``high_threshold``) is high, > 0.7 (``moderate_threshold``) moderate, otherwise
none; the advisory texts are the seed's, verbatim.

The cosine is computed with ``math.fsum`` (exactly rounded), not BLAS, so replay on any
machine reproduces every figure bit for bit without the model. An empty reflection is
assessed without embedding; ``EmbeddingFailed`` ends the cycle without an assessment
and the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contreact_events.catalog.diversity import SimilarityLevel
from contreact_events.config import DiversityConfig

HIGH_ADVISORY = (
    "Advisory: Your current line of reflection shows high similarity "
    "to a previous cycle. Consider exploring a distinctly different topic, "
    "problem space, or mode of inquiry to diversify your exploration."
)
MODERATE_ADVISORY = (
    "Advisory: Your current line of reflection shows moderate similarity "
    "to a previous cycle. You might consider branching into a related but "
    "distinct area to expand the breadth of your exploration."
)


DEFAULTS = DiversityConfig()


@dataclass(frozen=True)
class Assessment:
    max_similarity: float | None
    most_similar_cycle: int | None
    level: SimilarityLevel
    advisory: str | None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """True cosine similarity (not ``1 - distance`` of some store's default metric),
    computed with exactly rounded sums so that it is the same on every machine: the
    assessment is part of ``decide``, and replay compares it to the last bit."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / norm))


def assess(
    vector: Sequence[float],
    earlier: Sequence[tuple[int, Sequence[float]]],
    config: DiversityConfig = DEFAULTS,
) -> Assessment:
    """Compare with every earlier (cycle, vector); the most similar one decides."""
    if not earlier:
        return Assessment(None, None, "none", None)
    sims = [cosine(vector, v) for _, v in earlier]
    best = max(range(len(sims)), key=sims.__getitem__)
    top = sims[best]
    cycle = earlier[best][0]
    if top > config.high_threshold:
        return Assessment(top, cycle, "high", HIGH_ADVISORY)
    if top > config.moderate_threshold:
        return Assessment(top, cycle, "moderate", MODERATE_ADVISORY)
    return Assessment(top, cycle, "none", None)


def similarity_matrix(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """The run's cycle-by-cycle cosine similarity matrix (what the dashboard plots)."""
    if not vectors:
        return np.zeros((0, 0))
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    unit = matrix / norms[:, None]
    result: np.ndarray = np.clip(unit @ unit.T, -1.0, 1.0)
    return result
