"""Seed 001's paragraph-level repetition check, pure: split a text into paragraphs,
compare each paragraph's vector with a corpus of earlier paragraphs (a
``VectorIndex`` scope: a run or an experiment), drop naturally repetitive ones
("In summary", ...), and write the seed's feedback for the regeneration prompt.

Embedding is the caller's job (the embedder service); this module gets vectors.

Boundaries, exactly as the seed states them:

- a stored chunk matches a paragraph when ``similarity > threshold`` (0.85): a
  score of exactly 0.85 is *not* a match;
- the text is unique when ``overall_similarity < threshold``, the overall
  similarity being the best remaining match (0.0 without one). Since every match
  is above the threshold, "unique" is the same as "no match": exactly 0.85 is
  unique, the next float above is not;
- feedback calls a match a near-duplicate when ``score >= 0.90`` (exactly 0.90 is
  critical) and moderately similar when ``0.85 <= score < 0.90``;
- after ``MAX_ATTEMPTS`` the best attempt is accepted when its similarity is
  ``< RELAXED_THRESHOLD`` (0.90): see ``accepts_best_effort``.

Similarities are true cosines (the seed's source took ``1 - distance`` of a store
whose default distance was not cosine).

Past 100 chunks in the corpus, sliding windows of 3 paragraphs are searched too: a
window's vector is the normalized mean of its paragraphs' vectors (no second model
call), and the paragraphs are searched as well as the windows (the seed searches
windows instead, but a window alone dilutes one repeated paragraph among new ones
below the threshold).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from contreact_events.diversity.linear_regex import compile_linear, pattern_set
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.exceptions import ConfigError

PARAGRAPH_MIN_LENGTH = 50
SIMILARITY_THRESHOLD = 0.85
RELAXED_THRESHOLD = 0.90
NEAR_DUPLICATE = 0.90
MAX_ATTEMPTS = 5
SLIDING_WINDOW_SIZE = 3
SLIDING_WINDOW_ACTIVATION = 100
"""Sliding windows are used once the scope holds *more* than this many chunks."""
SEARCH_RESULTS = 5
"""Stored chunks looked up per paragraph (the seed's ``n_results``)."""

IGNORE_PATTERNS = (
    r"^As (discussed|mentioned|stated) (earlier|previously|before)",
    r"^(Recall|Remember) (that|from|how)",
    r"^In summary",
    r"^To recap",
    r"^Follow-up:",
)
"""Paragraphs that may repeat earlier content by nature (seed 001, verbatim)."""

REWRITE_LINE = "   ➜ REWRITE this section with a fresh perspective."
SUGGESTIONS = (
    "Approach the topic from a different angle or perspective.",
    "Use new examples, evidence or analogies instead of earlier ones.",
    "Vary the structure and wording of your paragraphs.",
    "Build on earlier points instead of restating them.",
)
REGENERATE_WITH = (
    "Fresh perspectives and new angles on the topic",
    "Different examples and supporting details",
    "Varied sentence structure and vocabulary",
    "New insights rather than restated points",
)
TOO_SIMILAR = "IMPORTANT: Your previous response was too similar to earlier content."

_BLANK_LINE = re.compile(r"\n\s*\n")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ParagraphMatch(_Frozen):
    """A paragraph of the new text and a stored chunk it is too similar to."""

    query_paragraph: str
    """The paragraph of the new text."""
    matched_paragraph: str
    """The stored chunk's text."""
    similarity_score: float
    """Cosine similarity (of the paragraph's window, when windows were used)."""
    stored_content_id: str
    """The stored chunk's ``parent_id`` metadata (its document), else its own id."""
    paragraph_index: int
    """Position of the paragraph in the new text, from 0."""
    matched_index: int
    """The stored chunk's ``chunk_index`` metadata; -1 when it has none."""


class SimilarityResult(_Frozen):
    """The outcome of one check of a text against the corpus."""

    overall_similarity: float
    """Best score among the remaining matches; 0.0 when there is none."""
    is_unique: bool
    """``overall_similarity < threshold``: the text may be accepted."""
    paragraph_matches: tuple[ParagraphMatch, ...]
    """Matches after dropping natural repetitions, best first."""
    unique_paragraphs: tuple[int, ...]
    """Indices of the paragraphs no remaining match points at."""
    feedback: str
    """``generate_similarity_feedback`` of the matches; empty when unique."""
    attempts_remaining: int
    """Regeneration attempts left, as given by the caller."""


def split_paragraphs(text: str, min_length: int = PARAGRAPH_MIN_LENGTH) -> list[str]:
    """Paragraphs separated by blank lines (``\\n``, optional whitespace, ``\\n``),
    stripped; those shorter than ``min_length`` characters are dropped."""
    stripped = (part.strip() for part in _BLANK_LINE.split(text))
    return [part for part in stripped if len(part) >= min_length]


def _compile(pattern: str) -> Any:
    try:
        return compile_linear(pattern)
    except ConfigError as exc:
        raise ConfigError(
            f"invalid ignore pattern: {exc} (a Python regular expression, matched "
            "case-insensitively at the start of each paragraph, in linear time)"
        ) from None


def compile_patterns(patterns: Iterable[str]) -> tuple[Any, ...]:
    """Compile a researcher's extra ignore patterns for the linear-time matcher
    (``linear_regex``: cached, once per pattern); an invalid one, or one that cannot be
    matched in linear time, raises ``ConfigError`` naming it. Call it when a config is
    loaded so that a bad pattern fails there, not in the middle of a run."""
    return tuple(_compile(p) for p in patterns)


def is_naturally_repetitive(paragraph: str, extra_patterns: Iterable[str] = ()) -> bool:
    """Whether the paragraph starts like a deliberate callback ("As discussed
    earlier", "In summary", ...): the seed's patterns plus ``extra_patterns``, as
    ``re.match`` with ``re.IGNORECASE`` would say, in time linear in the paragraph
    whatever the pattern (``linear_regex``: a config's pattern is untrusted). Only the
    patterns are compiled; the paragraph (agent text) is only ever the string matched."""
    extra = tuple(extra_patterns)
    compile_patterns(extra)  # each named, should one not do
    return pattern_set((*IGNORE_PATTERNS, *extra)).match(paragraph)


def filter_natural_repetitions(
    matches: Iterable[ParagraphMatch], extra_patterns: Iterable[str] = ()
) -> list[ParagraphMatch]:
    """The matches whose ``query_paragraph`` is not naturally repetitive."""
    extra = tuple(extra_patterns)
    return [m for m in matches if not is_naturally_repetitive(m.query_paragraph, extra)]


def accepts_best_effort(best_similarity: float, relaxed: float = RELAXED_THRESHOLD) -> bool:
    """After the last attempt, whether the best one passes the relaxed threshold
    (``best_similarity < relaxed``); the seed keeps it either way, but logs
    topic exhaustion when this is false."""
    return best_similarity < relaxed


def sliding_windows(
    paragraphs: Sequence[str], size: int = SLIDING_WINDOW_SIZE
) -> list[tuple[int, int, str]]:
    """Windows of ``size`` consecutive paragraphs, stride 1, as ``(start, end, text)``
    with ``end`` exclusive and the paragraphs joined by a blank line. Fewer
    paragraphs than ``size`` make a single window of all of them; none, no window.

    A window's match is a match of every paragraph in ``range(start, end)``; a
    paragraph covered by several windows keeps, per stored chunk, its best score."""
    if size < 1:
        raise ValueError(f"window size must be at least 1, got {size}")
    if not paragraphs:
        return []
    if len(paragraphs) <= size:
        return [(0, len(paragraphs), "\n\n".join(paragraphs))]
    return [
        (start, start + size, "\n\n".join(paragraphs[start : start + size]))
        for start in range(len(paragraphs) - size + 1)
    ]


def _format_match(number: int, match: ParagraphMatch) -> list[str]:
    return [
        f"{number}. Paragraph {match.paragraph_index + 1}: {match.similarity_score:.0%} similar",
        f"   Preview: {match.query_paragraph[:100]}...",
        REWRITE_LINE,
    ]


def generate_similarity_feedback(
    matches: Iterable[ParagraphMatch], extra_patterns: Iterable[str] = ()
) -> str:
    """Seed 001's feedback: a header with the number of flagged paragraphs, the top 3
    near-duplicates (``>= 0.90``), the top 2 moderately similar (``0.85 <= s <
    0.90``), and suggestions; empty when no match remains after dropping natural
    repetitions. A paragraph matching several stored chunks is listed once, with
    its best score."""
    best: dict[int, ParagraphMatch] = {}
    for m in filter_natural_repetitions(matches, extra_patterns):
        known = best.get(m.paragraph_index)
        if known is None or m.similarity_score > known.similarity_score:
            best[m.paragraph_index] = m
    if not best:
        return ""
    ranked = sorted(best.values(), key=lambda m: (-m.similarity_score, m.paragraph_index))
    high = [m for m in ranked if m.similarity_score >= NEAR_DUPLICATE][:3]
    medium = [m for m in ranked if SIMILARITY_THRESHOLD <= m.similarity_score < NEAR_DUPLICATE][:2]
    lines = [f"Similarity check: {len(ranked)} paragraph(s) too similar to earlier content."]
    for title, group in (
        ("CRITICAL - Near-duplicate paragraphs:", high),
        ("Moderately similar paragraphs:", medium),
    ):
        if group:
            lines += ["", title]
            for number, m in enumerate(group, start=1):
                lines += _format_match(number, m)
    lines += ["", "Suggestions to avoid repetition:", *(f"- {s}" for s in SUGGESTIONS)]
    return "\n".join(lines)


def augment_prompt_with_feedback(original_prompt: str, feedback: str) -> str:
    """Seed 001 step 4.5: the warning, the feedback and regeneration instructions,
    then the original prompt. Without feedback the prompt is returned unchanged."""
    if not feedback.strip():
        return original_prompt
    return "\n".join(
        [
            TOO_SIMILAR,
            "",
            feedback,
            "",
            "Please regenerate with:",
            *(f"- {item}" for item in REGENERATE_WITH),
            "",
            original_prompt,
        ]
    )


def _unit_mean(vectors: Sequence[Sequence[float]]) -> npt.NDArray[np.float64]:
    """Mean of the unit-length vectors, normalized (a zero mean stays zero); every
    step elementwise or an exactly rounded sum, so the same on every machine."""
    total: npt.NDArray[np.float64] | None = None
    for v in vectors:
        row = np.asarray(v, dtype=np.float64)
        norm = math.sqrt(math.fsum((row * row).tolist()))
        unit = row / norm if norm else np.zeros_like(row)
        total = unit if total is None else total + unit
    if total is None:
        raise ValueError("a window needs at least one vector")
    norm = math.sqrt(math.fsum((total * total).tolist()))
    return total / norm if norm else total


def _chunk_index(value: str | None) -> int:
    try:
        return int(value) if value is not None else -1
    except ValueError:
        return -1


def check_paragraphs(
    paragraphs: Sequence[str],
    vectors: Sequence[Sequence[float]],
    index: VectorIndex,
    *,
    scope: str,
    threshold: float = SIMILARITY_THRESHOLD,
    extra_patterns: Iterable[str] = (),
    attempts_remaining: int = MAX_ATTEMPTS,
    sliding_window_activation: int = SLIDING_WINDOW_ACTIVATION,
) -> SimilarityResult:
    """Check a text's paragraphs (and their vectors, in order) against ``scope``.

    Each paragraph's vector is searched (top ``SEARCH_RESULTS``). When the scope
    holds more than ``sliding_window_activation`` chunks (the seed's
    ``SLIDING_WINDOW_ACTIVATION_THRESHOLD``, 100), windows of
    ``SLIDING_WINDOW_SIZE`` paragraphs are searched as well, and a window's matches
    count for each of its paragraphs. A window's vector is the normalized mean of
    its paragraphs' unit vectors rather than the embedding of the joined text: the
    mean needs no second model call (the check stays within one batch encode), and
    for this model it points close to the joined text's embedding. The seed searches
    windows *instead of* paragraphs; alone, a window dilutes one repeated paragraph
    among two new ones below the threshold (the benchmark showed two verbatim
    repeats going unflagged), so the paragraphs are searched too: both in one
    matrix product, well within the search budget.

    Matches above ``threshold`` are kept, naturally repetitive paragraphs dropped.
    """
    if len(paragraphs) != len(vectors):
        raise ValueError(f"{len(paragraphs)} paragraphs but {len(vectors)} vectors")
    extra = tuple(extra_patterns)
    compile_patterns(extra)  # a bad pattern fails here, even without matches
    owners = [range(i, i + 1) for i in range(len(paragraphs))]
    queries: list[Sequence[float] | npt.NDArray[np.float64]] = list(vectors)
    if index.count(scope) > sliding_window_activation:
        windows = sliding_windows(paragraphs, SLIDING_WINDOW_SIZE)
        owners += [range(start, end) for start, end, _ in windows]
        queries += [_unit_mean(vectors[start:end]) for start, end, _ in windows]
    found: dict[tuple[int, str], ParagraphMatch] = {}
    hit_lists = index.search_many(queries, k=SEARCH_RESULTS, scope=scope, min_score=threshold)
    for owner, hits in zip(owners, hit_lists, strict=True):
        for hit in hits:
            if not hit.score > threshold:
                continue
            for i in owner:
                key = (i, hit.id)
                known = found.get(key)
                if known is not None and known.similarity_score >= hit.score:
                    continue
                found[key] = ParagraphMatch(
                    query_paragraph=paragraphs[i],
                    matched_paragraph=hit.text,
                    similarity_score=hit.score,
                    stored_content_id=hit.metadata.get("parent_id", hit.id),
                    paragraph_index=i,
                    matched_index=_chunk_index(hit.metadata.get("chunk_index")),
                )
    matches = sorted(
        filter_natural_repetitions(found.values(), extra),
        key=lambda m: (
            -m.similarity_score,
            m.paragraph_index,
            m.stored_content_id,
            m.matched_index,
        ),
    )
    overall = max((m.similarity_score for m in matches), default=0.0)
    flagged = {m.paragraph_index for m in matches}
    return SimilarityResult(
        overall_similarity=overall,
        is_unique=overall < threshold,
        paragraph_matches=tuple(matches),
        unique_paragraphs=tuple(i for i in range(len(paragraphs)) if i not in flagged),
        feedback=generate_similarity_feedback(matches),
        attempts_remaining=attempts_remaining,
    )
