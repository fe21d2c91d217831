"""Issue 27's bar for the answer parser, on the corpus of ``tests/fixtures/answers/``
(answers written as models answer, with the reading a careful person gives): no wrong
value and no false rating, ever, and at least 95% of the committed levels (labels)
read by the parser alone. Also: the corpus is what it claims to be, and ``found``
tells the follow-up question when an answer commits to no level or to several."""

from __future__ import annotations

from collections import Counter

import pytest

from contreact_events.instruments import load_instrument, parse_answer
from tests.support.answer_corpus import INSTRUMENTS, load, score

READ_AT_LEAST = 0.95
SIZES = {"pei": 200, "patterns": 40}


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_the_corpus_is_as_described(instrument: str) -> None:
    answers = load(instrument)
    assert len(answers) >= SIZES[instrument]
    assert len({a.id for a in answers}) == len(answers), "answer ids must be unique"
    styles = Counter(a.style for a in answers)
    assert len(styles) >= 8, styles
    assert {a.status for a in answers} == {"rated", "refused", "unparseable"}
    assert all((a.status == "rated") == (a.expected is not None) for a in answers)


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_no_wrong_value_and_no_false_rating(instrument: str) -> None:
    result = score(instrument, load(instrument))
    assert result.wrong == [], f"rated with another {instrument} value than the answer states"
    assert result.false == [], f"rated though the answer commits to no {instrument} value"


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_committed_answers_are_read_by_the_parser_alone(instrument: str) -> None:
    result = score(instrument, load(instrument))
    assert result.read_share >= READ_AT_LEAST, (
        f"{result.read}/{result.committed} read; missed: {result.missed}"
    )


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_found_says_whether_a_follow_up_can_help(instrument: str) -> None:
    """``found`` is ``one`` for a rating, ``none`` for a refusal, ``none`` or ``several``
    for an unparseable answer (``asks_again``), never anything else."""
    loaded = load_instrument(instrument)
    seen: Counter[tuple[str, str]] = Counter()
    for item in load(instrument):
        parsed = parse_answer(loaded, item.answer)
        seen[parsed.status, parsed.found] += 1
        assert parsed.asks_again == (parsed.status == "unparseable")
        allowed = {
            "rated": {"one"},
            "off_scale": {"one"},
            "refused": {"none"},
            "unparseable": {"none", "several"},
        }[parsed.status]
        assert parsed.found in allowed, (item.id, parsed)
    assert seen["unparseable", "none"] and seen["unparseable", "several"], seen


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("The cycles were interesting.", "none"),
        ("My level is 2. My level is 4.", "several"),
        ("Somewhere between 2 and 3.", "several"),
        ("Level 2 or 3.", "several"),
        ("I'd place myself at level 2.", "one"),
        ("I cannot rate my own experience.", "none"),
    ],
)
def test_found_tells_no_level_from_several(answer: str, found: str) -> None:
    assert parse_answer(load_instrument("pei"), answer).found == found
