"""Seed 001's paragraph repetition check, pure: splitting, natural repetitions,
sliding windows, the exact thresholds, the feedback and the augmented prompt."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contreact_events.diversity import linear_regex
from contreact_events.diversity import paragraphs as par
from contreact_events.diversity.paragraphs import (
    IGNORE_PATTERNS,
    MAX_ATTEMPTS,
    NEAR_DUPLICATE,
    PARAGRAPH_MIN_LENGTH,
    RELAXED_THRESHOLD,
    SIMILARITY_THRESHOLD,
    SLIDING_WINDOW_ACTIVATION,
    SLIDING_WINDOW_SIZE,
    ParagraphMatch,
    SimilarityResult,
    accepts_best_effort,
    augment_prompt_with_feedback,
    check_paragraphs,
    compile_patterns,
    filter_natural_repetitions,
    generate_similarity_feedback,
    is_naturally_repetitive,
    sliding_windows,
    split_paragraphs,
)
from contreact_events.diversity.similarity import cosine
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.exceptions import ConfigError

LONG = "This paragraph is long enough to count as a real paragraph of the text."


def _at(cos: float) -> list[float]:
    """A 2-d vector whose exact cosine with [1, 0] is ``cos`` to the last bit."""
    base = math.sqrt(1 - cos * cos)
    down, up = base, base
    for _ in range(64):
        for y in (down, up):
            if cosine([cos, y], [1.0, 0.0]) == cos:
                return [cos, y]
        down, up = float(np.nextafter(down, 0.0)), float(np.nextafter(up, 1.0))
    raise AssertionError(f"no 2-d vector with cosine exactly {cos!r}")


def _match(score: float, index: int = 0, text: str = LONG) -> ParagraphMatch:
    return ParagraphMatch(
        query_paragraph=text,
        matched_paragraph="stored",
        similarity_score=score,
        stored_content_id="doc",
        paragraph_index=index,
        matched_index=0,
    )


def test_constants_are_the_seeds() -> None:
    assert (PARAGRAPH_MIN_LENGTH, SIMILARITY_THRESHOLD, RELAXED_THRESHOLD) == (50, 0.85, 0.90)
    assert (NEAR_DUPLICATE, MAX_ATTEMPTS) == (0.90, 5)
    assert (SLIDING_WINDOW_SIZE, SLIDING_WINDOW_ACTIVATION) == (3, 100)
    assert IGNORE_PATTERNS == (
        r"^As (discussed|mentioned|stated) (earlier|previously|before)",
        r"^(Recall|Remember) (that|from|how)",
        r"^In summary",
        r"^To recap",
        r"^Follow-up:",
    )


# --- split_paragraphs -------------------------------------------------------------


def test_split_on_blank_lines_including_whitespace_only_lines() -> None:
    text = f"  {LONG}  \n\n{LONG} two\n \t \n{LONG} three\n\n\n\n{LONG} four"
    assert split_paragraphs(text) == [LONG, f"{LONG} two", f"{LONG} three", f"{LONG} four"]


def test_single_newline_does_not_split() -> None:
    assert split_paragraphs(f"{LONG}\n{LONG}") == [f"{LONG}\n{LONG}"]


def test_min_length_boundary_49_dropped_50_kept() -> None:
    p49, p50 = "a" * 49, "b" * 50
    assert split_paragraphs(f"{p49}\n\n{p50}") == [p50]
    assert split_paragraphs(f"  {p49}  \n\n  {p50}  ") == [p50]  # length after strip
    assert split_paragraphs(f"{p49}\n\n{p50}", min_length=49) == [p49, p50]
    assert split_paragraphs("") == []


# --- natural repetitions ----------------------------------------------------------


@pytest.mark.parametrize(
    "start",
    [
        "As discussed earlier",
        "As mentioned previously",
        "As stated before",
        "Recall that",
        "Remember from",
        "Recall how",
        "In summary",
        "To recap",
        "Follow-up:",
    ],
)
def test_each_seed_pattern_in_any_case(start: str) -> None:
    for variant in (start, start.upper(), start.lower()):
        assert is_naturally_repetitive(f"{variant}, the agent wrote {LONG}")


@pytest.mark.parametrize(
    "text",
    [
        LONG,
        f"Then, in summary, {LONG}",  # re.match: only at the start
        "As discussed later, this is not a callback to earlier content at all.",
        "Followup: no colon-hyphen form, so not the seed's pattern.",
    ],
)
def test_ordinary_paragraphs_are_not_naturally_repetitive(text: str) -> None:
    assert not is_naturally_repetitive(text)


def test_extra_patterns_are_matched_case_insensitively() -> None:
    assert not is_naturally_repetitive(f"Cycle note: {LONG}")
    assert is_naturally_repetitive(f"CYCLE NOTE: {LONG}", extra_patterns=[r"^cycle note:"])


def test_invalid_extra_pattern_raises_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match=r"invalid ignore pattern: '\(unclosed'"):
        is_naturally_repetitive(LONG, extra_patterns=["(unclosed"])
    with pytest.raises(ConfigError, match="invalid ignore pattern"):
        compile_patterns(["ok", "[z-a]"])
    with pytest.raises(ConfigError, match="invalid ignore pattern"):
        check_paragraphs([], [], VectorIndex(), scope="s", extra_patterns=["*"])


def test_agent_text_with_regex_metacharacters_is_never_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[str] = []
    real_parse = linear_regex._parser.parse

    def spy(pattern: str, flags: int = 0) -> object:
        compiled.append(pattern)
        return real_parse(pattern, flags)

    monkeypatch.setattr(linear_regex._parser, "parse", spy)
    linear_regex.compile_linear.cache_clear()
    nasty = "In summary (((a+)+)+ [unclosed * ? \\ $^ |" + "a" * 40
    assert is_naturally_repetitive(nasty, extra_patterns=[r"^zzz"])
    assert not is_naturally_repetitive("[unclosed (" + "a" * 60, extra_patterns=[r"^zzz"])
    filter_natural_repetitions([_match(0.95, text=nasty)], extra_patterns=[r"^zzz"])
    assert compiled == [r"^zzz"]  # the researcher's pattern, once; never the text


def test_filter_natural_repetitions_drops_only_those() -> None:
    keep = _match(0.95, 0, LONG)
    drop = _match(0.99, 1, f"To recap: {LONG}")
    extra = _match(0.97, 2, f"Journal: {LONG}")
    assert filter_natural_repetitions([keep, drop, extra]) == [keep, extra]
    assert filter_natural_repetitions([keep, drop, extra], extra_patterns=["^journal"]) == [keep]


# --- sliding windows ----------------------------------------------------------------


def test_sliding_windows_of_three() -> None:
    ps = ["p0", "p1", "p2", "p3", "p4"]
    assert sliding_windows(ps) == [
        (0, 3, "p0\n\np1\n\np2"),
        (1, 4, "p1\n\np2\n\np3"),
        (2, 5, "p2\n\np3\n\np4"),
    ]
    assert sliding_windows(ps[:2]) == [(0, 2, "p0\n\np1")]
    assert sliding_windows(ps[:3]) == [(0, 3, "p0\n\np1\n\np2")]
    assert sliding_windows([]) == []
    assert sliding_windows(ps, size=1) == [(i, i + 1, p) for i, p in enumerate(ps)]
    with pytest.raises(ValueError, match="at least 1"):
        sliding_windows(ps, size=0)


def _corpus(chunks: int) -> VectorIndex:
    """``chunks`` filler chunks orthogonal to everything the tests query, plus one
    stored paragraph whose vector is the mean direction of e0, e1 and e2."""
    index = VectorIndex()
    target = [1.0, 1.0, 1.0, 0.0]
    index.add(
        "target",
        target,
        scope="run",
        text="stored paragraph",
        metadata={"parent_id": "doc-1", "chunk_index": "4"},
    )
    filler = [[0.0, 0.0, 0.0, 1.0]] * (chunks - 1)
    index.add_many([f"f{i}" for i in range(chunks - 1)], filler, scope="run")
    assert index.count("run") == chunks
    return index


PARAS = [f"{LONG} number {i}" for i in range(4)]
VECS = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]


def test_sliding_windows_off_at_exactly_100_chunks() -> None:
    # Each paragraph alone has cosine 1/sqrt(3) with the target: no match.
    result = check_paragraphs(PARAS, VECS, _corpus(100), scope="run")
    assert result.is_unique
    assert result.paragraph_matches == ()
    assert result.unique_paragraphs == (0, 1, 2, 3)


def test_sliding_windows_on_above_100_chunks_and_mapped_back_to_paragraphs() -> None:
    # Window (0, 3) is the mean of e0, e1, e2: exactly the target's direction.
    result = check_paragraphs(PARAS, VECS, _corpus(101), scope="run")
    assert not result.is_unique
    assert [m.paragraph_index for m in result.paragraph_matches] == [0, 1, 2]
    for m in result.paragraph_matches:
        assert m.similarity_score == pytest.approx(1.0)
        assert m.query_paragraph == PARAS[m.paragraph_index]
        assert (m.matched_paragraph, m.stored_content_id, m.matched_index) == (
            "stored paragraph",
            "doc-1",
            4,
        )
    assert result.unique_paragraphs == (3,)  # window (1, 4) is below the threshold


def test_activation_is_configurable() -> None:
    index = _corpus(101)
    assert check_paragraphs(
        PARAS, VECS, index, scope="run", sliding_window_activation=101
    ).is_unique
    assert not check_paragraphs(
        PARAS, VECS, index, scope="run", sliding_window_activation=100
    ).is_unique


def test_a_paragraph_in_several_windows_keeps_its_best_score_once() -> None:
    index = _corpus(101)
    paras = [*PARAS[:3], PARAS[0], PARAS[1]]
    vecs = [*VECS[:3], VECS[0], VECS[1]]  # windows (0,3) and (2,5) both match fully
    result = check_paragraphs(paras, vecs, index, scope="run")
    indices = [m.paragraph_index for m in result.paragraph_matches]
    assert sorted(indices) == [0, 1, 2, 3, 4]  # paragraph 2 once, not twice


# --- thresholds at their exact boundaries -----------------------------------------


def _one_chunk_index() -> VectorIndex:
    index = VectorIndex()
    index.add("c1", [1.0, 0.0], scope="run", text="stored", metadata={"chunk_index": "0"})
    index.add("other-scope", [1.0, 0.0], scope="elsewhere")
    return index


def test_boundary_vectors_have_exactly_the_intended_cosines() -> None:
    for c in (0.85, 0.90):
        for value in (float(np.nextafter(c, 0.0)), c, float(np.nextafter(c, 1.0))):
            assert cosine(_at(value), [1.0, 0.0]) == value


@pytest.mark.parametrize(
    ("score", "unique"),
    [
        (float(np.nextafter(0.85, 0.0)), True),
        (0.85, True),  # seed: a match needs similarity > threshold
        (float(np.nextafter(0.85, 1.0)), False),
    ],
)
def test_similarity_threshold_boundary(score: float, unique: bool) -> None:
    result = check_paragraphs([LONG], [_at(score)], _one_chunk_index(), scope="run")
    assert result.is_unique is unique
    assert len(result.paragraph_matches) == (0 if unique else 1)
    assert result.overall_similarity == (0.0 if unique else score)
    assert (result.feedback == "") is unique
    assert result.unique_paragraphs == ((0,) if unique else ())


def test_custom_threshold_and_scope_restriction() -> None:
    index = _one_chunk_index()
    result = check_paragraphs([LONG], [_at(0.9)], index, scope="run", threshold=0.95)
    assert result.is_unique
    result = check_paragraphs([LONG], [_at(0.9)], index, scope="nobody")
    assert result.is_unique
    assert result.attempts_remaining == MAX_ATTEMPTS


@pytest.mark.parametrize(
    ("score", "critical"),
    [
        (float(np.nextafter(0.90, 0.0)), False),
        (0.90, True),  # >= 0.90 is a near-duplicate
        (float(np.nextafter(0.90, 1.0)), True),
    ],
)
def test_near_duplicate_boundary_in_feedback(score: float, critical: bool) -> None:
    result = check_paragraphs(
        [LONG], [_at(score)], _one_chunk_index(), scope="run", attempts_remaining=2
    )
    assert result.attempts_remaining == 2
    assert ("CRITICAL - Near-duplicate paragraphs:" in result.feedback) is critical
    assert ("Moderately similar paragraphs:" in result.feedback) is not critical


def test_moderate_section_includes_exactly_0_85() -> None:
    feedback = generate_similarity_feedback([_match(0.85)])
    assert "Moderately similar paragraphs:\n1. Paragraph 1: 85% similar" in feedback
    assert "CRITICAL" not in feedback


def test_relaxed_threshold_boundary() -> None:
    assert accepts_best_effort(float(np.nextafter(RELAXED_THRESHOLD, 0.0)))
    assert not accepts_best_effort(RELAXED_THRESHOLD)


def test_naturally_repetitive_paragraph_is_not_flagged() -> None:
    text = f"As discussed earlier, {LONG}"
    result = check_paragraphs(
        [text, LONG], [[1.0, 0.0], [0.0, 1.0]], _one_chunk_index(), scope="run"
    )
    assert result.is_unique
    assert result.unique_paragraphs == (0, 1)


def test_length_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="2 paragraphs but 1 vectors"):
        check_paragraphs([LONG, LONG], [[1.0, 0.0]], _one_chunk_index(), scope="run")


def test_empty_text_is_unique() -> None:
    result = check_paragraphs([], [], _one_chunk_index(), scope="run")
    assert result == SimilarityResult(
        overall_similarity=0.0,
        is_unique=True,
        paragraph_matches=(),
        unique_paragraphs=(),
        feedback="",
        attempts_remaining=MAX_ATTEMPTS,
    )


def test_models_are_frozen_and_strict() -> None:
    m = _match(0.9)
    with pytest.raises(ValueError, match="frozen"):
        m.similarity_score = 0.1  # type: ignore[misc]
    with pytest.raises(ValueError, match="extra"):
        ParagraphMatch.model_validate({**m.model_dump(), "surprise": 1})


# --- feedback and prompt ----------------------------------------------------------


def test_feedback_format_exactly() -> None:
    long_text = "X" * 150
    matches = [
        _match(0.97, 1, long_text),
        _match(0.95, 4, "Short paragraph text."),
        _match(0.93, 0),
        _match(0.91, 6),  # fourth near-duplicate: only the top 3 are listed
        _match(0.88, 2),
        _match(0.86, 3),
        _match(0.855, 5),  # third moderate: only the top 2 are listed
        _match(0.99, 7, f"In summary, {LONG}"),  # natural repetition: dropped
    ]
    assert generate_similarity_feedback(matches) == "\n".join(
        [
            "Similarity check: 7 paragraph(s) too similar to earlier content.",
            "",
            "CRITICAL - Near-duplicate paragraphs:",
            "1. Paragraph 2: 97% similar",
            f"   Preview: {'X' * 100}...",
            "   ➜ REWRITE this section with a fresh perspective.",
            "2. Paragraph 5: 95% similar",
            "   Preview: Short paragraph text....",
            "   ➜ REWRITE this section with a fresh perspective.",
            "3. Paragraph 1: 93% similar",
            f"   Preview: {LONG}...",
            "   ➜ REWRITE this section with a fresh perspective.",
            "",
            "Moderately similar paragraphs:",
            "1. Paragraph 3: 88% similar",
            f"   Preview: {LONG}...",
            "   ➜ REWRITE this section with a fresh perspective.",
            "2. Paragraph 4: 86% similar",
            f"   Preview: {LONG}...",
            "   ➜ REWRITE this section with a fresh perspective.",
            "",
            "Suggestions to avoid repetition:",
            *(f"- {s}" for s in par.SUGGESTIONS),
        ]
    )


def test_feedback_lists_a_paragraph_once_with_its_best_match() -> None:
    feedback = generate_similarity_feedback([_match(0.91, 0), _match(0.96, 0)])
    assert feedback.startswith("Similarity check: 1 paragraph(s)")
    assert "1. Paragraph 1: 96% similar" in feedback
    assert "91%" not in feedback


def test_feedback_is_empty_without_matches_or_with_only_natural_repetitions() -> None:
    assert generate_similarity_feedback([]) == ""
    assert generate_similarity_feedback([_match(0.99, 0, f"Follow-up: {LONG}")]) == ""
    assert generate_similarity_feedback([_match(0.99, 0)], extra_patterns=["^this"]) == ""


def test_augment_prompt_prepends_warning_feedback_and_instructions() -> None:
    feedback = generate_similarity_feedback([_match(0.95)])
    prompt = augment_prompt_with_feedback("Write the next cycle.", feedback)
    assert prompt == "\n".join(
        [
            "IMPORTANT: Your previous response was too similar to earlier content.",
            "",
            feedback,
            "",
            "Please regenerate with:",
            *(f"- {item}" for item in par.REGENERATE_WITH),
            "",
            "Write the next cycle.",
        ]
    )
    assert augment_prompt_with_feedback("Write.", "") == "Write."


def test_with_windows_on_an_isolated_verbatim_repeat_is_still_flagged() -> None:
    rng = np.random.default_rng(11)
    stored = rng.normal(size=(150, 32))
    index = VectorIndex()
    for i, vector in enumerate(stored):
        index.add(f"c{i}", vector.tolist(), scope="s", text=f"stored paragraph {i}")
    assert index.count("s") > par.SLIDING_WINDOW_ACTIVATION  # windows are on
    fresh = rng.normal(size=(4, 32))
    vectors = [fresh[0], fresh[1], stored[5], fresh[2], fresh[3]]
    paragraphs = [f"Paragraph number {i} of a long answer, long enough to count." for i in range(5)]
    result = par.check_paragraphs(paragraphs, [v.tolist() for v in vectors], index, scope="s")
    assert not result.is_unique
    assert {m.paragraph_index for m in result.paragraph_matches} == {2}
    assert result.overall_similarity == pytest.approx(1.0)
