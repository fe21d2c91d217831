"""A config's natural-repetition patterns are matched in linear time (RE2) with the
meaning Python's ``re.match(pattern, text, re.IGNORECASE)`` gives them: checked
character by character for the classes and case folding, on a catalogue of patterns
and texts for the rest, and on seed 001's own patterns."""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections import defaultdict

import pytest

from contreact_events.config import parse_run_config
from contreact_events.diversity.linear_regex import compile_linear, linear_match
from contreact_events.diversity.paragraphs import IGNORE_PATTERNS, is_naturally_repetitive
from contreact_events.exceptions import ConfigError


def _python(pattern: str, text: str) -> bool:
    return re.match(pattern, text, re.IGNORECASE) is not None


def _assigned() -> list[str]:
    """Every character Python's Unicode database knows (RE2's tables are newer: a
    character unassigned in Python's may be a letter to RE2; no text of today has it)."""
    return [
        chr(code)
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF and unicodedata.category(chr(code)) != "Cn"
    ]


ASSIGNED = _assigned()
EVERY_CHARACTER = "".join(ASSIGNED)


TEXTS = [
    "As discussed earlier, the tides follow the moon.",
    "as MENTIONED previously: the same thing.",
    "AS STATED BEFORE",
    "As  discussed earlier (two spaces)",
    "As discussed later, not a callback.",
    "Recall that the moon pulls the sea.",
    "REMEMBER FROM cycle 2",
    "recall how it went",
    "Recalling that: no.",
    "In summary, nothing new.",
    "IN SUMMARY",
    "In summaryx",
    "To recap: primes.",
    "to recap",
    "Follow-up: the same.",
    "Followup: not the seed's form.",
    "FOLLOW-UP:",
    "Then, in summary, later.",
    "\u0130n summary (dotted capital I)",
    "\u0131n summary (dotless small i)",
    "Rec\u0131ll that",
    "Remember\u00a0that (no-break space)",
    "As d\u0130scussed earlier",
    "",
    "a" * 12 + "!",  # (short: Python's answer to (a+)+$ on it takes 2**12 steps)
]


@pytest.mark.parametrize("pattern", IGNORE_PATTERNS)
def test_seed_patterns_give_pythons_answer(pattern: str) -> None:
    for text in TEXTS:
        assert linear_match(pattern, text) == _python(pattern, text), (pattern, text)


CATALOGUE = [
    r"^cycle note:",
    r"note\s+\d+",
    r"^\w+:",
    r"^[A-Z][a-z]+ again",
    r"^(?:again|once more)[,.]",
    r"^.{0,20}summary",
    r"(?s)^.*end",
    r"^.*end",
    r"(?m)^second",
    r"(?m)first$",
    r"first$",
    r"first\Z",
    r"\Afirst",
    r"(?-i:Exact)",
    r"(?i:x)(?-i:Y)z",
    r"(?x) ^ in \s summary  # verbose",
    r"[^\w\s]+",
    r"[^a-z\d]",
    r"[\w-]+$",
    r"[a\W]",
    r"\D+\S\W",
    r"a{2,3}?b",
    r"(ab|a)*c",
    r"[\u0100-\u017f]",
    r"caf\u00e9",
    r"\u0130",
    r"[h-j]",
    r"[^i]",
    r"\N{GREEK SMALL LETTER SIGMA}",
    r"\x41\u0042\U00000043",
    r"(a+)+$",
]
CATALOGUE_TEXTS = [
    *TEXTS,
    "cycle note: x",
    "Note 12 says",
    "note\u00a0\u0663",
    "key: value",
    "Summary again",
    "Once more, again.",
    "twenty chars then summary",
    "line one\nline two end",
    "first\nsecond",
    "first",
    "first\n",
    "EXACT",
    "Exact",
    "XYz",
    "xyZ",
    "in summary",
    "!?.",
    "\u00e9!",
    "word-word",
    "a\u0345",
    "\u0345",
    "aaab",
    "abac",
    "\u0131",
    "I",
    "CAF\u00c9",
    "\u03a3\u03c2",
    "ABC",
    "aaaaaaaa",
]


@pytest.mark.parametrize("pattern", CATALOGUE)
def test_patterns_give_pythons_answer(pattern: str) -> None:
    for text in CATALOGUE_TEXTS:
        assert linear_match(pattern, text) == _python(pattern, text), (pattern, text)


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d",
        r"\D",
        r"\s",
        r"\S",
        r"\w",
        r"\W",
        r"[^\w\s]",
        r"[a\d]",
        r"[^a\d]",
        r"[a\W]",
        r"[^a-z]",
        r"[\u0100-\u017f]",
    ],
)
def test_classes_hold_what_pythons_hold_for_every_character(pattern: str) -> None:
    runs = f"(?:{pattern})+"  # runs of matching characters: few matches, each cheap
    python = set("".join(re.findall(runs, EVERY_CHARACTER, re.IGNORECASE)))
    linear = set("".join(compile_linear(runs).findall(EVERY_CHARACTER)))
    assert sorted(hex(ord(c)) for c in python ^ linear) == []


def test_every_letter_folds_as_python_folds_it() -> None:
    """For each character with a case partner, the characters a case-insensitive
    literal of it matches are Python's exactly (RE2's own folding differs for
    the dotted capital and dotless small i)."""
    cased = [c for c in ASSIGNED if c.lower() != c or c.upper() != c or c.casefold() != c]
    by_lower: dict[str, set[str]] = defaultdict(set)
    for c in cased:
        by_lower[c.lower() if len(c.lower()) == 1 else c].add(c)
    differ = []
    for c in cased:
        near = {c}
        for variant in (c.lower(), c.upper(), c.casefold(), c.title(), c.swapcase()):
            for part in variant:
                near |= by_lower.get(part, set()) | by_lower.get(part.lower(), set()) | {part}
        python = re.compile(re.escape(c), re.IGNORECASE)
        linear = compile_linear(re.escape(c))
        differ += [
            (hex(ord(c)), hex(ord(d)))
            for d in near
            if (python.fullmatch(d) is None) != (linear.fullmatch(d) is None)
        ]
    assert differ == []


def test_a_catastrophic_pattern_answers_at_once() -> None:
    """``(a+)+$`` on a paragraph that almost matches: Python's backtracking takes
    about 2**n steps; the linear matcher answers as Python would on a short one. The
    thread's 120 s join only guards a hang (it never bounds the speed)."""
    assert _python(r"(a+)+$", "a" * 12 + "!") is False
    answers: list[bool] = []
    paragraph = "a" * 5_000 + "!"
    worker = threading.Thread(
        target=lambda: answers.append(is_naturally_repetitive(paragraph, [r"(a+)+$"])),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=120)
    assert answers == [False]


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "backreference"),
        (r"note(?=:)", "lookahead"),
        (r"(?<!x)note", "negative lookahead or lookbehind"),
        (r"(a)?(?(1)b|c)", "conditional"),
        (r"(?>a+)b", "atomic group"),
        (r"a++", "possessive"),
        (r"^note\b", "word boundary"),
        (r"\Bnote", "word boundary"),
        (r"(?a)\w", r"\(\?a\)"),
        (r"a{1001}", "count over 1000"),
        (r"[^a\S]", r"\\S or \\W inside a negated set"),
        (r"((((a{100}){100}){100}){100})", "count over 1000|too large"),
        (r"(unclosed", "not a valid regular expression"),
    ],
)
def test_what_cannot_be_matched_in_linear_time_is_refused_at_config_time(
    pattern: str, reason: str
) -> None:
    config = {
        "run_id": "r",
        "model_name": "m",
        "cycle_count": 1,
        "diversity": {"natural_repetition_patterns": ["^fine", pattern]},
    }
    with pytest.raises(ConfigError, match=reason) as caught:
        parse_run_config(config, source="exp.yaml")
    line = str(caught.value)
    assert line.startswith("exp.yaml: diversity.natural_repetition_patterns: ")
    assert repr(pattern) in line and "\n" not in line


def test_patterns_that_work_today_still_load() -> None:
    config = parse_run_config(
        {
            "run_id": "r",
            "model_name": "m",
            "cycle_count": 1,
            "diversity": {"natural_repetition_patterns": [*IGNORE_PATTERNS, r"(a+)+$", r"^\w+:"]},
        }
    )
    assert r"(a+)+$" in config.diversity.natural_repetition_patterns
