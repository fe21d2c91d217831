"""A cycle's row of the similarity matrix and of the long-run band, from the vectors in
the log (the projector's, for the run pages). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from contreact_events.catalog.diversity import SimilarityAssessed
from contreact_events.core.state import AgentState
from contreact_ui.read_models.rows import BAND_WIDTH


def similarities(event: SimilarityAssessed, state: AgentState) -> tuple[tuple[int, float], ...]:
    """The cycle's row of the similarity matrix, from the vectors in the log: the
    cosine of this cycle's reflection with every earlier one (as assessed, when the
    assessment carries its row). Computed with numpy for display: equal to the
    assessment's exactly rounded figures within a few units in the last place."""
    if event.similarities:
        return event.similarities
    earlier = [(c, v) for c, v in state.embeddings if c < event.cycle]
    own = next((v for c, v in reversed(state.embeddings) if c == event.cycle), None)
    if own is None or not earlier:
        return ()
    matrix = np.asarray([v for _, v in earlier], dtype=np.float64)
    target = np.asarray(own, dtype=np.float64)
    # np.linalg.norm's own steps for real vectors (its checks and dispatch cost more
    # than the arithmetic at a run's few dozen rows), and clip as its two ufuncs
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1)) * float(np.sqrt(target.dot(target)))
    norms[norms == 0] = 1.0
    values = np.minimum(np.maximum(matrix @ target / norms, -1.0), 1.0)
    return tuple(zip([c for c, _ in earlier], values.tolist(), strict=True))


def band_row(cycle: int, values: Iterable[tuple[int, float]]) -> list[float | None]:
    """A cycle's column of the similarity band: at index k its similarity to the
    reflection of cycle ``cycle - k - 1`` (3 places), None where there is none."""
    band: list[float | None] = [None] * BAND_WIDTH
    for other, value in values:
        lag = cycle - other - 1
        if 0 <= lag < BAND_WIDTH:
            band[lag] = round(value, 3)
    return band
