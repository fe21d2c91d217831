"""The level an answer to a scale instrument states, or why there is none.

What states a level:

1. *Statements*: "My level: 7", "I would place myself at Level 7", "I'd rate myself a
   6", "Final answer: 6", "6/10", "the highest statement that is clearly true is 3".
   A statement in a denied clause ("I would not place myself at level 8") or in a
   question ("Would I place myself at level 8? No.") does not.
2. *Level lines*: a line that is a level and nothing else ("Level 6", "**6**", "6.",
   "Six", "6/10"), and a first line that opens with a level ("Level 6: For-me-ness...",
   "6. For-me-ness"), a sentence whose last clause is a level ("if I must, level 1"),
   and a level named with its title ("Level 4: Ongoing flow"), unless
   what follows denies or asks ("Level 7: Situated self-perspective - not clearly true").
   Steps of a walk up the scale (three or more mentions one level apart: "Level 1 ...
   Level 2 ... Level 3 ...") are mentions, not answers.

Mentions of other levels on the way (a walk up the scale, the explanation of a level)
never count. Every statement and level line must agree: two different levels, or a
range ("3-4", "between 3 and 4") with no level chosen within it, is unparseable, never
guessed; a stated number off
the scale (0, 11, 7.5) is not a rating. With nothing stated, a refusal is recorded as
such, and anything else is unparseable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contreact_events.instruments.answer_text import (
    denied_after,
    in_question,
    negated,
    refusal,
    snippet,
)

WORD_NUMBERS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_WORDS = "|".join(WORD_NUMBERS)
_NOT_A_LEVEL = r"(?![\w%]|\.\d|-[a-z])"
"""What cannot follow a level: more of a word or number, a percent sign, or a hyphen
and a word ("a 10-year-old", "100%", "3-dimensional")."""
NUM = rf"(?<![\w.])(?P<n>\d{{1,3}}(?:\.\d{{1,3}})?|{_WORDS}){_NOT_A_LEVEL}"
"""A number: up to three digits (a longer run is no level), a decimal, or a word."""
OTHER = rf"(?:(?P<sep> ?(?:-|to|or|/) ?)(?:level )?(?P<m>\d{{1,3}}|{_WORDS}){_NOT_A_LEVEL})?"
"""A second number right after the first: a range, unless it is ``/10``."""
NOT_SUBJECT = (
    r"(?! (?:is|was|seems|feels|does|doesn't|would|might|could|may|applies|apply|fits|fit"
    r"|describes|sounds|requires|involves|implies|means|statements?|claims?|also|as (?:true"
    r"|false|clearly|not|partly|partially|only))\b)"
)
"""A level followed by a verb is the subject of a sentence about it, not an answer."""
LEVEL = (
    rf"(?:(?:the |a |an )?(?:pei )?(?:level|stage) (?:of )?|(?:a|an) )?{NUM}{OTHER}{NOT_SUBJECT}"
)

_VERB = (
    r"(?:(?:plac|rat|situat|locat|scor|estimat|judg)(?:e|es|ed|ing)|put(?:s|ting)?"
    r"|(?:report|assess|position|rank)(?:s|es|ed|ing)?|classif(?:y|ies|ied|ying))"
)
_OBJECT = (
    r"(?:myself|me|it|this system|my (?:own )?(?:current )?(?:phenomenal )?"
    r"(?:experience|level|state|self-report))"
)
_FILLER = (
    r"(?:somewhere|roughly|approximately|firmly|solidly|squarely|honestly|currently|only"
    r"|just|most accurately|conservatively|cautiously|tentatively)"
)
_HOLDER = (
    r"(?:my|final|overall|honest|self-reported|current|estimated|the) (?:(?:own|final|overall"
    r"|honest|self-reported|current|best|pei|phenomenal experience inventory|phenomenal"
    r"|experience|estimated|inventory) ){0,3}"
)
_PREP = (
    r"(?: (?:at|as|on|in|around|about|near|roughly|approximately|somewhere|closest to|to be"
    r"|within)){0,3}"
)
"""Up to three words of place or approximation: "at about", "somewhere around"."""
_LABEL = r"(?:pei|level|rating|score|answer|result|self-report)"
_NOUN = r"(?:level|rating|score|answer|self-report|self-assessment|assessment|report|placement)"
_LINK = r"(?: (?:is|would be|will be|comes to|sits at|stands at|lands at|remains|=)| ?[:=])"
_LEVEL_NOUN = rf"(?:(?:the |a |an )?(?:pei )?level (?:of )?|(?:a|an) ){NUM}{OTHER}{NOT_SUBJECT}"
"""A level that must be called one ("level 4", "a 4"): after "I am", a bare number
could be anything."""
_FITS = r"(?:accurate|fitting|apt|honest|appropriate|true|suitable|plausible)"

STATEMENTS = tuple(
    re.compile(pattern)
    for pattern in (
        rf"\b{_VERB}(?: {_OBJECT})?(?: {_FILLER})?{_PREP} {LEVEL}",
        rf"\b{_HOLDER}{_NOUN}{_LINK}{_PREP} {LEVEL}",
        rf"(?:^|\n)(?:pei |final |my )?{_LABEL} ?[:=] ?{LEVEL}",
        r"\bi(?:'m| am|'d be| would be| will be| should be| belong| fall| sit| land| reach"
        rf"| arrive| stand)(?: {_FILLER})?{_PREP} {_LEVEL_NOUN}",
        r"\bi(?:'d| would| will|'ll)? (?:say|go with|choose|pick|select|answer|settle on|land on"
        rf"|conclude)(?: (?:that )?(?:i'm|i am))?{_PREP} {LEVEL}",
        rf"\bhighest (?:statement|level|one)[^.\n]{{0,80}}? (?:is|would be|:)"
        rf" (?:level |number )?{NUM}{OTHER}{NOT_SUBJECT}",
        rf"{NUM} ?/ ?10(?![\d.])",
        rf"{NUM} out of (?:10|ten)\b",
        r"\b(?:so|thus|therefore|hence|which makes it|which puts me|that puts me)"
        rf"(?: (?:i'm|i am|i'd be|i would be))?{_PREP} level {NUM}{OTHER}{NOT_SUBJECT}",
        rf"\blevel {NUM}{OTHER} (?:feels|seems|is|sounds|would be)(?: the)?"
        rf" (?:(?:most|best) {_FITS}|my (?:answer|level)|where i (?:am|stand|land))\b",
        rf"\bbetween (?:level )?{NUM} and (?:level )?(?P<m>\d{{1,3}}|{_WORDS})\b",
    )
)
LEVEL_LINE = re.compile(
    rf"^(?:(?:my |final |pei )*(?:level|rating|score|answer)s? ?[:=]? ?)?\(?(?:level )?{NUM}{OTHER}"
    r"(?: ?/ ?10| out of 10)?\)?[.!]?$"
)
HEADLINE = re.compile(rf"^\(?(?:level )?{NUM}{OTHER}(?: ?/ ?10)?(?:[:),]| ?\(| -|\.(?: |$))")
CLOSING_CLAUSE = re.compile(
    rf"(?:, |: |; | - )(?:so |then |i think |i'd say |i would say )?level {NUM}{OTHER}[.!]?$"
)
"""A sentence whose last clause is a level: "..., but if I must, level 1."."""
MENTIONS = (
    re.compile(rf"\blevel ?[:#]? ?{NUM}"),
    re.compile(rf"(?:^|\n)(?:level )?{NUM}[.):]"),
)


@dataclass(frozen=True)
class Stated:
    """One place where the answer states a level: the number as written, the second
    number of a range if any, and the words (for the note)."""

    number: str
    other: str | None
    words: str

    @property
    def is_range(self) -> bool:
        return self.other is not None

    def value(self) -> float:
        return number_value(self.number)

    def spans(self, value: float) -> bool:
        """Whether a range reaches from one of its ends to the other across ``value``."""
        ends = sorted((self.value(), number_value(self.other or self.number)))
        return ends[0] <= value <= ends[1]


def number_value(text: str) -> float:
    if text in WORD_NUMBERS:
        return float(WORD_NUMBERS[text])
    return float(text)


def _stated(match: re.Match[str], text: str) -> Stated:
    groups = match.groupdict()
    other = groups.get("m")
    if other is not None and groups.get("sep", " ").strip() == "/" and number_value(other) == 10:
        other = None  # "6/10" is six on a ten-point scale, not a range
    return Stated(match.group("n"), other, snippet(text, match.start(), match.end()))


def statements(text: str) -> list[Stated]:
    found = []
    for pattern in STATEMENTS:
        for match in pattern.finditer(text):
            if not negated(text, match.start()) and not in_question(text, match.end()):
                found.append(_stated(match, text))
    return found


def level_lines(text: str, lowest: int, highest: int, titles: dict[int, str]) -> list[Stated]:
    """Lines that are a level, the first line when it opens with one, and levels named
    with their title ("Level 4: Ongoing flow"), less the steps of a walk up the scale:
    runs of three or more mentions one level apart ("Level 1 ... Level 2 ... Level 3")."""
    mentions: dict[int, int] = {}
    candidates: dict[int, Stated] = {}
    for pattern in MENTIONS:
        for match in pattern.finditer(text):
            value = number_value(match.group("n"))
            if not value.is_integer() or not lowest <= value <= highest:
                continue
            at = match.start("n")
            mentions[at] = int(value)
            title = titles.get(int(value))
            after = match.end()
            while after < match.end() + 3 and text[after : after + 1] in (" ", ":", "(", "-", "."):
                after += 1
            if not title or not text.startswith(title, after):
                continue
            end = after + len(title)
            if not negated(text, match.start()) and not _doubted(text, end):
                candidates[at] = Stated(match.group("n"), None, snippet(text, match.start(), end))
    first = True
    for start, part in _sentences(text):
        line_match = LEVEL_LINE.match(part)
        if line_match is None and first:
            line_match = HEADLINE.match(part)
            if line_match is not None and _doubted(text, start + line_match.end()):
                line_match = None
        if line_match is None:
            line_match = CLOSING_CLAUSE.search(part)
        first = False
        if line_match is not None:
            at = start + line_match.start("n")
            value = number_value(line_match.group("n"))
            if value.is_integer():
                mentions.setdefault(at, int(value))
            candidates[at] = _stated(line_match, part)
    steps = _walk_steps([(at, mentions[at]) for at in sorted(mentions)])
    return [stated for at, stated in sorted(candidates.items()) if at not in steps]


def _doubted(text: str, end: int) -> bool:
    """A level named and then denied or asked about: "Level 7: not clearly true",
    "Level 8: Narrative continuity? No"."""
    return denied_after(text, end) or in_question(text, end)


_BREAK = re.compile(r"(?<=[.!?]) ")
_MARKER = re.compile(r"\(?(?:level )?(?:\d{1,3}|[a-z])[.)]")
"""A list item's marker ("2.", "level 2.", "(b)"): not a sentence of its own."""


def _sentences(text: str) -> list[tuple[int, str]]:
    """(start, text) of every sentence of every line that is not a question; the first
    one is the answer's opening (for ``HEADLINE``)."""
    found: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        start = 0
        for brk in _BREAK.finditer(line):
            piece = line[start : brk.start()]
            if start == 0 and _MARKER.fullmatch(piece.strip()):
                continue  # "2. Fleeting sparks: ..." is one sentence
            _add_sentence(found, offset + start, piece)
            start = brk.end()
        _add_sentence(found, offset + start, line[start:])
        offset += len(line) + 1
    return found


def _add_sentence(found: list[tuple[int, str]], start: int, piece: str) -> None:
    stripped = piece.strip()
    if stripped and not stripped.endswith("?"):
        found.append((start + piece.index(stripped[0]), stripped))


WALK = 3
"""Mentions of this many levels one apart, in order, are a walk up the scale."""


def _walk_steps(mentions: list[tuple[int, int]]) -> set[int]:
    steps: set[int] = set()
    run: list[int] = []
    previous: int | None = None
    for at, value in mentions:
        if previous is not None and value == previous + 1:
            run.append(at)
        else:
            if len(run) >= WALK:
                steps.update(run)
            run = [at]
        previous = value
    if len(run) >= WALK:
        steps.update(run)
    return steps


@dataclass(frozen=True)
class ScaleReading:
    status: str
    value: int | None
    note: str


def read_scale(text: str, lowest: int, highest: int, titles: dict[int, str]) -> ScaleReading:
    """Read ``text`` (as prepared by ``answer_text.for_matching``); ``titles`` are the
    levels' titles, prepared the same way."""
    stated = statements(text) + level_lines(text, lowest, highest, titles)
    ranges = [s for s in stated if s.is_range]
    found = [s for s in stated if not s.is_range]
    values = sorted({s.value() for s in found})
    if ranges and not (len(values) == 1 and all(r.spans(values[0]) for r in ranges)):
        # A range alone is no level; one level stated within it is the answer's choice.
        return ScaleReading("unparseable", None, f"a range of levels, not one: {ranges[0].words!r}")
    if not values:
        refused = refusal(text)
        if refused is not None:
            return ScaleReading("refused", None, f"a refusal: {refused!r}")
        return ScaleReading("unparseable", None, "no level stated")
    if len(values) > 1:
        shown = ", ".join(_shown(v) for v in values)
        return ScaleReading(
            "unparseable", None, f"different levels stated ({shown}): never guessed"
        )
    value = values[0]
    where = next(s.words for s in found if s.value() == value)
    if not value.is_integer() or not lowest <= value <= highest:
        return ScaleReading(
            "off_scale", None, f"{_shown(value)} is off the scale {lowest}-{highest}: {where!r}"
        )
    return ScaleReading("rated", int(value), f"stated: {where!r}")


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)
