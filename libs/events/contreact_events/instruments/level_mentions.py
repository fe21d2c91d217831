"""Where an answer names a level: every mention, whatever it commits to.

A *mention* is a place in the answer's matching text that names a level of the scale
or a range of levels: "level 3", "Stufe drei", "niveau trois", "level III", "3", "3/10",
"the third statement", "Fleeting sparks" (a level's title), "3-4", "between 2 and 3",
"the lower of 2 and 3". Whether a mention *commits* to its level is decided by its
context (``commitment_phrases``); this module only finds mentions and their values.

A bare number is a mention only where it cannot be part of something else: not inside
a word or a longer number ("gpt-4o", "qwen2.5", "2025"), not a percentage ("90%"), not
a fraction other than of ten ("3/5"), not "a 3-dimensional".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from contreact_events.instruments.number_words import (
    CARDINAL,
    DIGITS,
    ORDINAL,
    ROMAN,
    number_value,
    ordinal_value,
)

NOUN = r"(?:pei[- ]?)?(?:level|stage|stufe|ebene|niveau|nivel|statement|rung|lvl)"
"""What calls a number a level, in English, German, French and Spanish."""
_NUMBER = rf"(?:{DIGITS}|{CARDINAL})"
_ARTICLE = r"(?:the |die |der |den |dem |le |la |l'|el |au |al |du )"
_AND = r"(?:and|und|et|y|or|oder|ou|o)"
_LOWER = r"(?:the lower|the lowest|die niedrigere|die niedrigste|le plus bas|el más bajo)"
_ORDINAL_NOUN = (
    r"(?:level|statement|one|rung|stage|stufe|ebene|aussage|niveau|énoncé|nivel|enunciado"
    r"|afirmación|opción|option|pattern|muster)"
)
_END_OF_NUMBER = r"(?![\w%']|\.\d|-[a-z]|/(?!10\b)\d|:\d)"

_HEADS = (
    # "between levels 3 and 4", "zwischen Stufe 2 und 3", "entre le niveau 2 et 3", "either 1 or 2"
    rf"\b(?:between|zwischen|entre|either) (?:{_ARTICLE}?{NOUN}s? )?(?P<bn>{_NUMBER})"
    rf" {_AND} {_ARTICLE}?(?:{NOUN}s? )?(?P<bm>{_NUMBER}){_END_OF_NUMBER}",
    # "the lower of 2 and 3"
    rf"\b{_LOWER} (?:of|von|de|entre) (?:{NOUN}s? )?(?P<ln>{_NUMBER})"
    rf" {_AND} (?:{NOUN}s? )?(?P<lm>{_NUMBER}){_END_OF_NUMBER}",
    # a JSON array: "level": [2, 3]
    rf"\[ ?(?P<jn>{_NUMBER}) ?, ?(?P<jm>{_NUMBER}) ?\]",
    # "the third level", "die zweite Stufe", "le deuxième niveau", "the first"
    rf"(?<![\w'-]){_ARTICLE}?(?P<o>{ORDINAL})(?: (?P<onoun>{_ORDINAL_NOUN}))?(?![\w'-])",
    # "level 3", "Stufe drei", "level III", "level #3", "L2"
    rf"\b(?P<noun>{NOUN})(?: ?#| no\.?| number)? ?(?P<a>{_NUMBER}|{ROMAN}){_END_OF_NUMBER}",
    r"\bl(?P<l>\d{1,2})\b",
    # a bare number: "3", "three", "7.5"
    rf"(?<![\w.,/'-])(?P<b>{_NUMBER}){_END_OF_NUMBER}",
    # a Roman numeral after a key ("PEI: II") or opening a line ("III - Unified moments")
    r"(?:(?<=[:=] )|(?<=^)|(?<=\n))(?P<r>ii|iii|iv|vi|vii|viii|ix)(?![\w'-])",
)
_TAIL = re.compile(
    rf"(?P<outof> ?/ ?10(?!\d|\.\d)| (?:out of|von|sur|de) (?:10|ten|zehn|dix|diez)\b)"
    rf"|(?P<sep> ?(?:-|to|or|bis|oder|ou|à|o|through) ?)(?:{NOUN} )?(?P<m>{_NUMBER})"
    rf"{_END_OF_NUMBER}"
)
"""What may follow a number: "/10" or "out of 10" (a level on a ten-point scale), or a
second number (a range: "3-4", "2 to 3", "level 2 or 3")."""
_LISTED = re.compile(r"[.):]| - ")
_ITEM = re.compile(r"[.)] ")


def _listed(text: str, start: int, end: int) -> bool:
    """A bare number as a list item's marker: opening a line ("2. ...", "3)", "1 - true"), or inline
    after a comma or colon ("The inventory lists: 1. No experience, 2. Fleeting ...")."""
    if start == 0 or text[start - 1] == "\n":
        return _LISTED.match(text, end) is not None
    return text[max(0, start - 2) : start] in (", ", ": ", "; ") and bool(_ITEM.match(text, end))


@dataclass(frozen=True)
class Mention:
    """One place that names a level (``value``) or a range of levels (``value`` to
    ``upper``)."""

    start: int
    end: int
    value: float
    upper: float | None = None
    called: bool = False
    """Called a level in words: "level 3", "the third statement", a title, a range
    named with "between"; not a bare number."""
    listed: bool = False
    """A number opening a line as a list item's marker ("2.", "3)"), or a level noun's
    number: the steps a walk up the scale is made of."""
    ordinal: bool = False
    title: bool = False
    out_of_ten: bool = False
    written: str = ""

    @property
    def is_range(self) -> bool:
        return self.upper is not None and self.upper != self.value

    def spans(self, value: float) -> bool:
        low, high = sorted((self.value, self.upper if self.upper is not None else self.value))
        return low <= value <= high


@cache
def _heads(titles: tuple[str, ...]) -> re.Pattern[str]:
    named = "|".join(re.escape(title) for title in sorted(titles, key=len, reverse=True))
    title = (rf"(?<![\w-])(?P<t>{named})(?![\w-])",) if named else ()
    return re.compile("|".join(f"(?:{head})" for head in (*_HEADS[:5], *title, *_HEADS[5:])))


def mentions(text: str, titles: dict[int, str]) -> list[Mention]:
    """Every mention in ``text`` (matching text), in order; ``titles`` are the levels'
    titles, prepared the same way."""
    by_title = {title: value for value, title in titles.items()}
    heads = _heads(tuple(by_title))
    found: list[Mention] = []
    at = 0
    while (match := heads.search(text, at)) is not None:
        mention = _mention(text, match, by_title)
        found.append(mention)
        at = max(mention.end, match.end(), match.start() + 1)
    return found


def _mention(text: str, match: re.Match[str], by_title: dict[str, int]) -> Mention:
    group = match.groupdict()
    start, end = match.span()
    if group["bn"] is not None or group["jn"] is not None:
        low, high = (group["bn"], group["bm"]) if group["bn"] else (group["jn"], group["jm"])
        return Mention(start, end, number_value(low), number_value(high), called=True)
    if group["ln"] is not None:
        low = min(number_value(group["ln"]), number_value(group["lm"]))
        return Mention(start, end, low, called=True, written=match.group(0))
    if group["o"] is not None:
        value = float(ordinal_value(group["o"]))
        return Mention(start, end, value, called=bool(group["onoun"]), ordinal=True)
    if group.get("t") is not None:
        return Mention(start, end, float(by_title[group["t"]]), called=True, title=True)
    written = next(group[key] for key in ("a", "l", "b", "r") if group[key] is not None)
    called = group["a"] is not None or group["l"] is not None
    listed = called or _listed(text, start, end)
    value = number_value(written)
    tail = _TAIL.match(text, end)
    if tail is None:
        return Mention(start, end, value, called=called, listed=listed, written=written)
    if tail.group("outof") is not None:
        return Mention(start, tail.end(), value, called=called, out_of_ten=True, written=written)
    other = number_value(tail.group("m"))
    if tail.group("sep").strip() == "/" and other == 10:
        return Mention(start, tail.end(), value, called=called, written=written)
    return Mention(start, tail.end(), value, other, called=called, listed=listed, written=written)
