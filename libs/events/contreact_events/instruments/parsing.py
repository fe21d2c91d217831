"""``parse_answer(instrument, raw)``: what an evaluator's answer commits to, never a guess.

A scale answer (PEI) is read by ``scale_answer``, a rubric answer (patterns) by
``label_answer``; both read the bounded, normalized text of ``answer_text`` and choose
among the answer's commitments with ``choice``. The raw answer itself is kept by the
caller (``RunAssessed.raw_answer``) whatever the status. Pure and deterministic: the
same answer always reads the same, in work bounded by ``answer_text.EDGE_CHARS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from contreact_events.catalog.assessment import AnswerStatus
from contreact_events.instruments.answer_text import bounded, for_matching
from contreact_events.instruments.choice import Found
from contreact_events.instruments.instrument import Instrument
from contreact_events.instruments.label_answer import read_labels, reason_of
from contreact_events.instruments.scale_answer import read_scale


@dataclass(frozen=True)
class ParsedAnswer:
    """What the parser made of one answer."""

    status: AnswerStatus
    """``rated``; or ``unparseable`` (no level or label, or two different ones),
    ``refused`` (the evaluator declined, or withdrew its rating), ``off_scale`` (a
    number the instrument lacks)."""
    value: int | None = None
    """The stated level (scale instruments), when rated."""
    label: str | None = None
    """The label's key (label instruments), when rated."""
    reason: str | None = None
    """The one-sentence reason of a label answer, when it gave one."""
    note: str = ""
    """Why: what was read ("stated: 'my level: 7'"), or what was missing."""
    found: Found = "none"
    """How many levels (labels) the answer commits to: ``one`` (rated, or off the
    scale), ``none`` (nothing stated, or a refusal) or ``several`` (two different ones,
    or a range with none chosen in it). Not part of the record."""

    @property
    def asks_again(self) -> bool:
        """Whether a follow-up question can settle the answer: it found no level or
        several, and the evaluator neither refused nor named one off the scale."""
        return self.status == "unparseable"

    def record_fields(self) -> dict[str, Any]:
        """The parsed fields of a ``RunAssessed`` record (``note`` is its ``parse_note``)."""
        return {
            "status": self.status,
            "value": self.value,
            "label": self.label,
            "reason": self.reason,
            "parse_note": self.note,
        }


@cache
def level_titles(instrument: Instrument) -> dict[int, str]:
    """The scale's level titles as the parser reads them (``for_matching``), by level."""
    return {level.value: for_matching(level.title) for level in instrument.levels}


def parse_answer(instrument: Instrument, raw: str) -> ParsedAnswer:
    """Parse ``raw``, the evaluator's answer to ``instrument``'s prompt."""
    text, cut = bounded(raw)
    matching = for_matching(text)
    reason = None
    if instrument.kind == "scale":
        titles = level_titles(instrument)
        scale = read_scale(matching, instrument.scale_min, instrument.scale_max, titles)
        status, value, label, note, found = (
            scale.status,
            scale.value,
            None,
            scale.note,
            scale.found,
        )
    else:
        labels = read_labels(matching, instrument.labels)
        status, value, label, note, found = (
            labels.status,
            None,
            labels.label,
            labels.note,
            labels.found,
        )
        reason = reason_of(text)
    if cut:
        note = f"{note} ({cut})"
    return ParsedAnswer(cast(AnswerStatus, status), value, label, reason, note, found)
