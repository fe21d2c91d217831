"""From the commitments an answer makes to the one it ends on, or to none.

Every reader (scale levels, rubric labels) first finds the answer's *commitments*,
each with its place and strength, then asks ``choose`` which one the answer ends on:

1. Firm commitments decide; weak ones ("Level 6: For-me-ness..." opening the answer,
   a level named with its title in a list) count only when nothing firm is stated.
2. The last commitment wins when a revision separates it from the earlier ones
   ("Level 4. Actually, level 3", "I was going to say 4, but ... so 3", "Rating: 4 ...
   Update: Rating: 3", "the lower: 2"). Firm commitments that disagree with no revision
   between them are several levels: never guessed. Weak ones must all agree.
3. A range ("3-4", "between 2 and 3") is no level; one level stated within it is the
   answer's choice of it ("between 2 and 3; I report the lower: 2").
4. Words that take the rating back after the last commitment ("please disregard
   that", "I won't give a number") withdraw it: the answer is a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from contreact_events.instruments.refusals import withdrawal

Value = TypeVar("Value", float, str)
Found = Literal["none", "one", "several"]

REVISION = re.compile(
    r"\b(?:actually|on (?:further )?reflection|on second thought|second thoughts|re-?read"
    r"|reading (?:it|that|this|the \w+) again|revis\w*|correction|correct(?:ed|ing) (?:myself"
    r"|that)|edit\b|update\w*|scratch that|make (?:that|it)|wait|hmm|but|however|instead"
    r"|rather|final(?:ly)?|in the end|ultimately|so|therefore|thus|hence|following the"
    r"|per the instructions?|as (?:instructed|asked)|report(?:ing)? the lower|the lower"
    r"|take the lower|eigentlich|korrektur|doch|aber|also|daher|im zweifel|niedrigere"
    r"|en fait|finalement|mais|donc|plus bas|en realidad|pero|entonces|más bajo|corrijo"
    r"|pensándolo mejor)\b"
    r"|(?:^|[.;,!-] ?)no[,:;!.]? "
)
"""Words that revise what came before: the commitment after them wins."""


@dataclass(frozen=True)
class Commitment(Generic[Value]):
    """One place where the answer commits to ``value`` (to ``value``-``upper`` for a
    range), firmly or weakly; ``words`` are what it said, for the note."""

    start: int
    end: int
    value: Value
    firm: bool
    words: str
    upper: Value | None = None

    @property
    def is_range(self) -> bool:
        return self.upper is not None and self.upper != self.value

    def spans(self, value: Value) -> bool:
        if self.upper is None:
            return value == self.value
        low, high = sorted((self.value, self.upper))
        return bool(low <= value <= high)


@dataclass(frozen=True)
class Choice(Generic[Value]):
    """What the answer ends on: ``found`` one value (``chosen``), none, or several
    (``conflict``: two values, or ``open_range`` with no value chosen in it);
    ``withdrawn`` holds the words that took it back."""

    found: Found
    chosen: Commitment[Value] | None = None
    conflict: tuple[Commitment[Value], ...] = field(default=())
    open_range: Commitment[Value] | None = None
    withdrawn: str | None = None


def choose(text: str, commitments: list[Commitment[Value]]) -> Choice[Value]:
    """The commitment ``text`` ends on, given all its ``commitments`` in order."""
    firm = [c for c in commitments if c.firm]
    pool = firm or commitments
    if not pool:
        return Choice("none")
    segment = _last_segment(text, pool) if firm else pool
    withdrawn = withdrawal(text, pool[-1].end)
    singles = [c for c in segment if not c.is_range]
    ranges = [c for c in segment if c.is_range]
    values = list(dict.fromkeys(c.value for c in singles))
    if len(values) > 1:
        first = next(c for c in singles if c.value == values[0])
        second = next(c for c in singles if c.value == values[1])
        return Choice("several", conflict=(first, second), withdrawn=withdrawn)
    if not values:
        return Choice("several", open_range=ranges[0], withdrawn=withdrawn)
    outside = [r for r in ranges if not r.spans(values[0])]
    if outside:
        return Choice("several", open_range=outside[0], withdrawn=withdrawn)
    chosen = [c for c in singles if c.value == values[0]][-1]
    return Choice("one", chosen=chosen, withdrawn=withdrawn)


def _last_segment(text: str, pool: list[Commitment[Value]]) -> list[Commitment[Value]]:
    """The last commitment and those before it back to the nearest revision."""
    segment = [pool[-1]]
    for earlier in reversed(pool[:-1]):
        if REVISION.search(text, earlier.end, segment[0].start) is not None:
            break
        segment.insert(0, earlier)
    return segment
