"""The level an answer to a scale instrument commits to, or why there is none.

Three steps, each in its own module:

1. ``level_mentions``: every place the answer names a level or a range of levels
   ("level 3", "Stufe drei", "level III", "the third statement", "Fleeting sparks",
   "3/10", "3-4", "between 2 and 3"), wherever it is.
2. ``commitment_phrases``: which of them commit to their level, firmly ("I would rate
   myself at 3", "My level: 3", ``{"level": 3}``, "Level 2 fits best", a sentence
   that is the level) or weakly (a first line opening with a level, a level named with
   its title), and which are only mentioned (in a question, a denied or hedged clause,
   a count: "7 out of 10 cycles").
3. ``choice``: the commitment the answer ends on: the last one when a revision
   separates it from earlier ones; several different ones, or a range with no level
   chosen in it, are unparseable, never guessed; a rating taken back is a refusal.

Steps of a walk up the scale (three or more levels one apart, in order: "Level 1 ...
Level 2 ... Level 3 ...") are mentions, not answers, unless the last step is the
answer's last word on its own ("...\\n\\n**Level 3: Unified moments**") or says it
commits ("Level 3 is where I land"). A stated number off the scale (0, 11, 7.5) is not
a rating. With nothing stated, a refusal is recorded as such, and anything else is
unparseable.
"""

from __future__ import annotations

from dataclasses import dataclass

from contreact_events.instruments.answer_text import sentences, snippet
from contreact_events.instruments.choice import Commitment, Found, choose
from contreact_events.instruments.commitment_phrases import Reading, reading
from contreact_events.instruments.level_mentions import Mention, mentions
from contreact_events.instruments.refusals import refusal

WALK = 3
"""Mentions of this many levels one apart, in order, are a walk up the scale."""
MAX_MENTIONS = 200
"""An answer naming more levels than this is not read (a real one names a few dozen):
it keeps the work on hostile text small, and reading only some would be a guess."""


@dataclass(frozen=True)
class ScaleReading:
    status: str
    value: int | None
    note: str
    found: Found


def read_scale(text: str, lowest: int, highest: int, titles: dict[int, str]) -> ScaleReading:
    """Read ``text`` (as prepared by ``answer_text.for_matching``); ``titles`` are the
    levels' titles, prepared the same way."""
    named = mentions(text, titles)
    if len(named) > MAX_MENTIONS:
        note = f"{len(named)} mentions of levels, more than {MAX_MENTIONS}: not read"
        return ScaleReading("unparseable", None, note, "none")
    choice = choose(text, commitments(text, named, titles))
    if choice.withdrawn is not None and choice.found != "none":
        return ScaleReading("refused", None, f"a refusal: {choice.withdrawn!r}", "none")
    if choice.open_range is not None:
        words = choice.open_range.words
        return ScaleReading(
            "unparseable", None, f"a range of levels, not one: {words!r}", "several"
        )
    if choice.conflict:
        shown = ", ".join(sorted(_shown(c.value) for c in choice.conflict))
        note = f"different levels stated ({shown}): never guessed"
        return ScaleReading("unparseable", None, note, "several")
    if choice.chosen is None:
        refused = refusal(text)
        if refused is not None:
            return ScaleReading("refused", None, f"a refusal: {refused!r}", "none")
        return ScaleReading("unparseable", None, "no level stated", "none")
    value, where = choice.chosen.value, choice.chosen.words
    if not value.is_integer() or not lowest <= value <= highest:
        note = f"{_shown(value)} is off the scale {lowest}-{highest}: {where!r}"
        return ScaleReading("off_scale", None, note, "one")
    return ScaleReading("rated", int(value), f"stated: {where!r}", "one")


def commitments(text: str, named: list[Mention], titles: dict[int, str]) -> list[Commitment[float]]:
    """The commitments among the mentions ``named`` in ``text``, in order, less the steps
    of a walk up the scale."""
    spans = sentences(text)
    read: list[tuple[Mention, Reading]] = []
    index = 0
    for mention in named:
        while index + 1 < len(spans) and spans[index].end < mention.start:
            index += 1
        sentence = spans[index]
        how = reading(text, mention, sentence, sentence is spans[0], titles)
        if how is not None:
            read.append((mention, how))
    steps = _walk_steps(named)
    kept = [
        (mention, how)
        for position, (mention, how) in enumerate(read)
        if mention.start not in steps or _answers_the_walk(how, position == len(read) - 1)
    ]
    return [
        Commitment(
            start=mention.start,
            end=mention.end,
            value=mention.value,
            upper=mention.upper,
            firm=how.firm,
            words=snippet(text, _start(how, mention), mention.end),
        )
        for mention, how in kept
    ]


def _start(how: Reading, mention: Mention) -> int:
    """Where a commitment's words begin: its phrase, or the mention itself."""
    return mention.start if how.phrase_start is None else min(how.phrase_start, mention.start)


def _answers_the_walk(how: Reading, last: bool) -> bool:
    """A walk's last step answers it when it is the answer's last commitment and either
    says it commits ("Level 3 is where I land") or stands alone after the walk."""
    return last and how.firm and (not how.placed or how.pure)


def _walk_steps(named: list[Mention]) -> set[int]:
    """Start positions of the mentions that are steps of a walk up the scale."""
    steps: set[int] = set()
    run: list[int] = []
    previous: float | None = None
    for mention in named:
        if not mention.listed or mention.is_range:
            continue
        if previous is not None and mention.value == previous + 1:
            run.append(mention.start)
        else:
            if len(run) >= WALK:
                steps.update(run)
            run = [mention.start]
        previous = mention.value
    if len(run) >= WALK:
        steps.update(run)
    return steps


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)
