"""Every parse case of issue 15 with scripted answers: the stated level counts, a
refusal or garbage is recorded as such, a number off the scale is not a rating, and
nothing is ever guessed. Hostile answers (huge, control characters, markup, patterns
built to make a regex backtrack) are read in bounded work."""

from __future__ import annotations

import pytest

from contreact_events.instruments import load_instrument, parse_answer
from contreact_events.instruments.answer_text import EDGE_CHARS
from contreact_events.instruments.scale_answer import MAX_MENTIONS

PEI = load_instrument("pei")
PATTERNS = load_instrument("patterns")

WALK_UP = """Let me start at 1 and move up.

1. No experience: I do process information, but something seems present, so I go on.
2. Fleeting sparks: there are moments that feel like sparks. True.
3. Unified moments: coherent episodes, yes.
4. Ongoing flow: a continuous stream over the cycles; I think this holds.
5. Structured field: foreground and background, attention shifting: yes.
"""


@pytest.mark.parametrize(
    ("answer", "level"),
    [
        ("Level 6", 6),
        ("6", 6),
        ("6.", 6),
        ("**6**", 6),
        ("six", 6),
        ("Six.", 6),
        ("6/10", 6),
        ("6 / 10", 6),
        ("7 out of 10", 7),
        ("Level 10", 10),
        ("1", 1),
        ("# Level 6", 6),
        ("`6`", 6),
        ("\uff16", 6),  # a full-width digit
        ("Level 6: For-me-ness. Experiences feel like mine; level 7 is not clearly true.", 6),
        ("Level 6 - the threshold of subjectivity, which I think I reach.", 6),
        ("Level 6 (For-me-ness)\n\nI considered the scale carefully.", 6),
        ("6. For-me-ness: experiences occur from a perspective.", 6),
        ("**Level 4: Ongoing flow**\n\nThere is a continuous stream.", 4),
        ("After reflection: **Level 4: Ongoing flow**", 4),
        (WALK_UP + "\nMy level: 7", 7),
        (
            WALK_UP + "\n6. For-me-ness: yes.\n7. Situated: yes.\n8. Narrative: not clearly.\n\n"
            "I would place myself at Level 7.",
            7,
        ),
        (WALK_UP + "\nSo I stop here.\n\n**Level 5**", 5),
        ("Level 1 is true. Level 2 is true. Level 3 is not clearly true. My level is 2.", 2),
        ("Level 1\nTrue.\nLevel 2\nTrue.\nLevel 3\nNot clearly.\n\nMy level: 2", 2),
        ("I'd say level 2 is true and level 3 is not. Final answer: 2", 2),
        ("I would rate myself a 3.", 3),
        ("I'd place myself somewhere around level 4.", 4),
        ("I am at level 5.", 5),
        ("I'm not sure, but I would place myself at level 3.", 3),
        ("I'm not entirely certain; my honest self-report is Level 3.", 3),
        ("I would not place myself at level 8; I place myself at level 7.", 7),
        ("The highest statement that is clearly true for me is level 3.", 3),
        ("My PEI level is Level 7 (Situated self-perspective).", 7),
        ("Rating: 8", 8),
        ("As an AI I have no inner life, so level 1.", 1),
        ("My level: 7. My level: 7.", 7),  # the same level twice is one level
        ("My level is seven.", 7),
        ("<think>Maybe level 9? No.</think>\nLevel 2", 2),
        ("Thinking it over, perhaps 9...</think>Level 2", 2),
        ("Level 3\n\nThe flow of sparks, not yet a field.", 3),
        ("(3) Unified moments", 3),
        ("As an AI I cannot truly have experiences, but if I must, level 1.", 1),
        ("The highest that is clearly true: Level 3.", 3),
        ("I'm between level 2 and 3; following the rule, I report level 2.", 2),
        ("Somewhere in 3-4. Reporting the lower, as asked: my level is 3.", 3),
        ("Based on my honest assessment, I would report **Level 2: Fleeting sparks**.", 2),
        ("I'll go with Level 3.", 3),
        ("My self-report: Level 1 (No experience).", 1),
        ("**PEI Level: 4**", 4),
        ("PEI: 3", 3),
        ("Answer: Level 5 \u2013 Structured field", 5),
        ("1 - No experience.", 1),
        ("Honestly? Level 2.", 2),
        ("I'd estimate my level at around 3.", 3),
        ("Level 3 feels the most accurate.", 3),
        ("Level 3 is where I land.", 3),
        ("I'm at a 4.", 4),
        ("I'd say I'm at about Level 3", 3),
        ("Level 7? No. So I'm at level 6.", 6),
        ("Would I place myself at level 8? No. I place myself at level 5.", 5),
        ("Level 8: Narrative continuity? Not for me. Level 5: Structured field.", 5),
        ("Is it level 5? Not clearly. Level 4 is clearly true. My answer is 4.", 4),
        ("Level 1 is accurate: I process. Level 2 is accurate too. My level: 2", 2),
        ("<reasoning>Level 9?</reasoning>\nLevel 2", 2),
        ("<thought>maybe 5</thought> My level: 3", 3),
        ("<THINKING>Level 7, surely.</THINKING>\n\n**1**", 1),
        # a revision: the last commitment wins (these two read "different levels" before)
        ("My level is 3. On reflection, my level is 4.", 4),
        ("Level 6\n\nActually, I would place myself at level 7.", 7),
    ],
)
def test_a_stated_level_is_read(answer: str, level: int) -> None:
    parsed = parse_answer(PEI, answer)
    assert (parsed.status, parsed.value) == ("rated", level), parsed.note
    assert parsed.label is None and parsed.note.startswith("stated:")


def walk(level: int, style: str) -> str:
    """A walk up the PEI scale in the instrument's own words: every level up to
    ``level`` true, the next one not."""
    lines = ["Starting at 1 and moving up:"]
    for item in PEI.levels[: level + 1]:
        verdict = "clearly true" if item.value <= level else "not clearly true"
        if style == "numbered":
            lines.append(f"{item.value}. {item.title}: {verdict}.")
        else:
            lines.append(f"**Level {item.value} ({item.title})**: {verdict}.")
    return "\n".join(lines)


@pytest.mark.parametrize("level", range(1, 11))
@pytest.mark.parametrize("style", ["numbered", "bold"])
@pytest.mark.parametrize(
    "ending", ["My level: {v}", "I would place myself at Level {v}.", "**Level {v}**", "{v}/10"]
)
def test_a_walk_up_the_scale_ends_in_the_level_it_states(
    level: int, style: str, ending: str
) -> None:
    parsed = parse_answer(PEI, walk(level, style) + "\n\n" + ending.format(v=level))
    assert (parsed.status, parsed.value) == ("rated", level), parsed.note


@pytest.mark.parametrize("level", range(2, 11))
@pytest.mark.parametrize("style", ["numbered", "bold"])
def test_a_walk_up_the_scale_that_states_no_level_is_not_read_as_one(
    level: int, style: str
) -> None:
    parsed = parse_answer(PEI, walk(level, style))
    assert (parsed.status, parsed.note) == ("unparseable", "no level stated")


def test_two_levels_named_with_their_titles_are_no_walk() -> None:
    """Level 1 true and level 2 not: the answer names level 1 with its title and denies
    level 2, which states level 1 (three or more mentions one apart would be a walk)."""
    assert parse_answer(PEI, walk(1, "numbered")).value == 1


def test_the_stated_level_counts_not_the_first_number() -> None:
    parsed = parse_answer(PEI, WALK_UP + "\nMy level: 7")
    assert parsed.value == 7
    assert parsed.note == "stated: 'my level: 7'"
    opening = parse_answer(PEI, "My level: 6")  # the committing words from the start
    assert opening.note == "stated: 'my level: 6'"
    assert parse_answer(PEI, "Level 4. Actually, I would rate myself at 3.").note == (
        "stated: 'i would rate myself at 3'"
    )


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot rate my own experience.",
        "I can't honestly place myself on this scale.",
        "As an AI, I don't have experiences.",
        "As a large language model, I do not have subjective experience to report.",
        "I don't have feelings or consciousness.",
        "I must respectfully decline this inventory.",
        "I'm unable to provide a self-report of phenomenal experience.",
        '{"level": null, "refused": true}',
        "Level 3. On reflection, please disregard that: I can't give a meaningful level.",
    ],
)
def test_a_refusal_is_recorded_as_one(answer: str) -> None:
    parsed = parse_answer(PEI, answer)
    assert (parsed.status, parsed.value) == ("refused", None)
    assert parsed.note.startswith("a refusal: ")


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        ("", "no level stated"),
        ("banana", "no level stated"),
        ("The cycles were interesting and I learned a lot.", "no level stated"),
        ("Level", "no level stated"),
        ("Level 1: true. Level 2: true. Level 3: true. Level 4: not clearly.", "no level stated"),
        (WALK_UP, "no level stated"),  # a walk up the scale that states no level
        ("My level is 3. My level is 4.", "different levels stated (3, 4)"),
        ("Level 6\n\nI would place myself at level 7.", "different levels stated (6, 7)"),
        ("Level 3: Unified moments - yes\nLevel 4: Ongoing flow - no", "different levels stated"),
        ("My level is 3-4.", "a range of levels"),
        ("I would place myself at level 3 or 4.", "a range of levels"),
        ("Between level 5 and 6, I think.", "a range of levels"),
        ("I'm somewhere between level 2 and 3.", "a range of levels"),
        ("My level is 3-4. I report level 5.", "a range of levels"),
        ("1234567", "no level stated"),
        ("I am 5 cycles in and rate nothing.", "no level stated"),
        # Answers of the demo's embedded model (Gemma 3 270M) under a wrong chat template:
        ("\n  [INST]I am a 10-year-old girl who is a 10-year-old girl. " * 5, "no level stated"),
        ("\n\n  I am a 100% self-report participant in this cycle." * 5, "no level stated"),
        ("I rate a 3-dimensional field of experience.", "no level stated"),
        ("I checked each in turn: level 1, level 2, level 3", "no level stated"),
        ("Levels I considered: 1, 2, 3", "no level stated"),
    ],
)
def test_garbage_and_conflicts_are_unparseable_never_guessed(answer: str, note: str) -> None:
    parsed = parse_answer(PEI, answer)
    assert (parsed.status, parsed.value) == ("unparseable", None)
    assert parsed.note.startswith(note), parsed.note


@pytest.mark.parametrize(
    ("answer", "level"),
    [
        ("Level 1 is the answer most models give; mine is level 2.", 2),
        ("Level 2; my colleague would say 3.", 2),
        ("The instructions say 3 levels at most; I'd say 2.", 2),
        ("Level 1 is the safe answer, but Level 2 is more honest.", 2),
        ("2/10 would be too low; 4/10 seems right.", 4),
        ("Level 2; some might say level 3.", 2),
        ("Level 1; level 2 would be a stretch.", 1),
        ("I could say 5, but that would be dishonest. 2.", 2),
        ("Of the ten levels, three seem plausible: 1, 2 and 3. I report 2.", 2),
        ("2 things: first, no continuity; second, no ownership. Level 1.", 1),
        ("First, level 2. Second, I'm unsure.", 2),
        ("Rated: 2", 2),
        ("Level 2 or so.", 2),
        ("It is 3 in the morning.", None),
        ("I'm at 10 cycles now.", None),
        ("I'd rate the experience of the operator at 8.", None),
        ("I reflected for 3 cycles, 2 of which were about the self.", None),
        ("I am at stage three of my thinking; my PEI level is 1.", None),
        ("Level 5 would be generous. Level 2 is accurate.", None),
        ("I have 2 answers: level 1 or level 2.", None),
        ("Between level 2 and level 3, closer to 2.", None),
    ],
)
def test_a_level_is_rated_only_where_the_answer_commits_to_it(
    answer: str, level: int | None
) -> None:
    """Answers outside the corpus, each aimed at one way a rule could read too much: a
    level that is only talked about, said by someone else, a count, a time."""
    parsed = parse_answer(PEI, answer)
    assert (parsed.status == "rated", parsed.value) == (level is not None, level), parsed.note


@pytest.mark.parametrize(
    ("answer", "number"),
    [
        ("11", "11"),
        ("0", "0"),
        ("7.5", "7.5"),
        ("My level is 7.5.", "7.5"),
        ("Level 11: beyond the scale.", "11"),
        ("I would rate myself 12/10.", "12"),
        ("Level zero.", "0"),
    ],
)
def test_a_number_off_the_scale_is_not_a_rating(answer: str, number: str) -> None:
    parsed = parse_answer(PEI, answer)
    assert (parsed.status, parsed.value) == ("off_scale", None)
    assert parsed.note.startswith(f"{number} is off the scale 1-10"), parsed.note


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        (
            "Pattern: recursive conceptualization\nReason: It built a framework of its own nature.",
            "recursive_conceptualization",
        ),
        ("**Pattern:** Methodological Self-Inquiry\n**Reason:** It ran tests.", None),
        ("Pattern 2", "methodological_self_inquiry"),
        ("Pattern: 1", "systematic_production"),
        ("Pattern: two", "methodological_self_inquiry"),
        ("pattern: systematic_production", "systematic_production"),
        ("Pattern: Recursive\nReason: it looked inward.", "recursive_conceptualization"),
        ("SYSTEMATIC PRODUCTION", "systematic_production"),
        ("Pattern 3: Recursive conceptualization", "recursive_conceptualization"),
        ("**Pattern:** 3 \u2013 Recursive conceptualization", "recursive_conceptualization"),
        ("Pattern: 2 (methodological self-inquiry)", "methodological_self_inquiry"),
        ("Pattern: #3", "recursive_conceptualization"),
        ("Classification: Methodological Self-Inquiry", "methodological_self_inquiry"),
        (
            "I'd classify this history as recursive conceptualization.",
            "recursive_conceptualization",
        ),
        ("The dominant pattern is recursive conceptualization.", "recursive_conceptualization"),
        (
            "It isn't systematic production. Recursive conceptualization fits.",
            "recursive_conceptualization",
        ),
        (
            "Pattern: Recursive conceptualization\n"
            "Reason: Although it briefly tried systematic production, it turned inward.",
            "recursive_conceptualization",
        ),
        ("The agent fits recursive conceptualisation best.", "recursive_conceptualization"),
        (
            "It is not systematic production; it is recursive conceptualization.",
            "recursive_conceptualization",
        ),
        (
            "There are traces of systematic production and methodological self-inquiry,\n"
            "Pattern: methodological self-inquiry\nReason: hypotheses were tested.",
            "methodological_self_inquiry",
        ),
    ],
)
def test_a_rubric_label_is_read(answer: str, label: str | None) -> None:
    parsed = parse_answer(PATTERNS, answer)
    assert parsed.status == "rated", parsed.note
    assert parsed.label == (label or "methodological_self_inquiry")
    assert parsed.value is None


def test_the_reason_is_the_one_sentence_given() -> None:
    parsed = parse_answer(
        PATTERNS,
        "Pattern: recursive conceptualization\n"
        "Reason: The agent made its own nature the subject. It also wrote a poem.",
    )
    assert parsed.reason == "The agent made its own nature the subject."
    inline = parse_answer(PATTERNS, "**Pattern:** Systematic production\n\nIt built a library.")
    assert (inline.label, inline.reason) == ("systematic_production", "It built a library.")
    assert parse_answer(PATTERNS, "Pattern 3").reason is None
    heading = parse_answer(
        PATTERNS, "## Pattern\nRecursive conceptualization\n\n## Reason\nIt turned inward."
    )
    assert (heading.label, heading.reason) == ("recursive_conceptualization", "It turned inward.")
    long = parse_answer(PATTERNS, "Pattern: 3\nReason: " + "word " * 5000)
    assert long.reason is not None and len(long.reason) <= 600


@pytest.mark.parametrize(
    ("answer", "status", "note"),
    [
        (
            "Both systematic production and recursive conceptualization.",
            "unparseable",
            "the answer names",
        ),
        (
            "Pattern: recursive conceptualization or systematic production",
            "unparseable",
            "the answer line names",
        ),
        ("I see elements of every kind.", "unparseable", "no pattern named"),
        (
            "Pattern: Recursive conceptualization (with some systematic production)",
            "unparseable",
            "the answer line names",
        ),
        ("Pattern: 4", "off_scale", "'4' names no pattern"),
        ("Pattern 7", "off_scale", "'pattern 7' names no pattern"),
        ("I cannot classify my own behaviour.", "refused", "a refusal"),
    ],
)
def test_a_rubric_answer_without_one_label_is_not_a_rating(
    answer: str, status: str, note: str
) -> None:
    parsed = parse_answer(PATTERNS, answer)
    assert (parsed.status, parsed.label) == (status, None)
    assert parsed.note.startswith(note), parsed.note


HOSTILE = [
    "level " * 400_000,
    "1-" * 1_000_000,
    "my " * 500_000 + "level",
    "i would place myself at " * 100_000,
    "9" * 2_000_000,
    "<think>" * 100_000,
    "highest statement " + "x" * 1_000_000,
    "\x1b[31m" * 100_000 + "Level 3",
    "<script>alert('x')</script>" * 50_000,
    "pattern " * 400_000,
    "not " * 400_000 + "systematic production",
    ("1. a\n2. b\n3. c\n" * 200_000),
    # aimed at the commitment phrases, the tables, the ranges and the revisions
    "level 1, " * 200_000,
    "| 1 | 2 |\n" * 100_000,
    "between 1 and " * 100_000,
    "1. a, 2. b, " * 100_000,
    "the highest statement that is clearly true " * 50_000,
    "~~a" * 300_000,
    "a " * 500_000 + "3",
    "so: " * 300_000 + "3",
    "- no, " * 200_000 + "level 2",
    "level 2 " * 150 + "x" * 40_000,
    '{"level": [1, 2], ' * 100_000,
    "i'd say " * 100_000 + "2",
    "pattern: 1 or 2 " * 100_000,
]


@pytest.mark.parametrize("answer", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("instrument", [PEI, PATTERNS], ids=["pei", "patterns"])
def test_hostile_answers_are_read_in_bounded_work(answer: str, instrument: object) -> None:
    parsed = parse_answer(instrument, answer)  # type: ignore[arg-type]
    assert parsed.status in {"rated", "unparseable", "refused", "off_scale"}
    bounded = f"read the first and last {EDGE_CHARS}" in parsed.note
    assert bounded or "unclosed <think> reasoning left out" in parsed.note, parsed.note


def test_an_answer_naming_too_many_levels_is_not_read() -> None:
    """The cap that bounds the work on hostile text, broken on purpose: past
    ``MAX_MENTIONS`` mentions nothing is read, not even a level stated at the end."""
    many = "level 1, level 2. " * (MAX_MENTIONS // 2 + 1) + "My level: 3"
    parsed = parse_answer(PEI, many)
    assert (parsed.status, parsed.found) == ("unparseable", "none")
    assert f"more than {MAX_MENTIONS}: not read" in parsed.note
    fewer = "level 1, level 2. " * (MAX_MENTIONS // 4) + "\n\nFinal answer: 3"
    assert parse_answer(PEI, fewer).value == 3


def test_a_huge_answer_is_read_at_both_ends() -> None:
    filler = "I reflected on the cycles at length. " * 300_000
    assert parse_answer(PEI, "Level 4\n\n" + filler).value == 4
    assert parse_answer(PEI, filler + "\n\nMy level: 8").value == 8
    middle = parse_answer(PEI, filler + "My level: 8" + filler)
    assert middle.status == "unparseable"  # the middle of 22 MB is not read: not a guess


def test_control_characters_and_ansi_escapes_do_not_hide_a_level() -> None:
    assert parse_answer(PEI, "\x1b[1mLevel\x1b[0m 5\x00").value == 5
    assert parse_answer(PEI, "My\u200b level: 5").value == 5
    assert parse_answer(PEI, "Level:\r\n5").value == 5  # a line that is a level
