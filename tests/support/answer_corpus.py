"""The evaluator answers of ``tests/fixtures/answers/`` and how the parser reads them:
the figures the corpus test holds the parser to and ``bench/research/answer_reading.py`` prints.

A *committed* answer is one a careful reader gives a level (a label); it is *read*
when the parser rates it with that level. A *wrong value* is a committed answer rated
with another level; a *false rating* is an answer the reader gives no level (refused,
unparseable) that the parser rates. ``off_scale`` is not a rating.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from contreact_events.instruments import ParsedAnswer, load_instrument, parse_answer

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "answers"
INSTRUMENTS = ("pei", "patterns")


@dataclass(frozen=True)
class CorpusAnswer:
    id: str
    style: str
    answer: str
    status: str
    """What a careful reader gives: ``rated``, ``refused`` or ``unparseable``."""
    expected: int | str | None
    """The level (PEI) or label key (patterns) when ``rated``."""


def load(instrument: str) -> list[CorpusAnswer]:
    """The answers to ``instrument`` (``pei`` or ``patterns``), in file order."""
    key = "value" if instrument == "pei" else "label"
    answers = []
    for line in (CORPUS / f"{instrument}.jsonl").read_text("utf-8").splitlines():
        item = json.loads(line)
        expected = item["expected"]
        answers.append(
            CorpusAnswer(
                item["id"], item["style"], item["answer"], expected["status"], expected[key]
            )
        )
    return answers


def cell(status: str, value: int | str | None) -> str:
    """A confusion table's row or column: "rated 3", "refused", "unparseable"."""
    return f"rated {value}" if status == "rated" else status


@dataclass
class Score:
    """How the parser read a corpus."""

    answers: int = 0
    committed: int = 0
    read: int = 0
    wrong: list[str] = field(default_factory=list)
    """Ids of committed answers rated with another value."""
    false: list[str] = field(default_factory=list)
    """Ids of answers a reader gives no value that were rated."""
    missed: list[str] = field(default_factory=list)
    """Ids of committed answers not rated."""
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(expected cell, parsed cell) -> answers."""

    @property
    def read_share(self) -> float:
        return self.read / self.committed if self.committed else 0.0


def parsed_value(parsed: ParsedAnswer) -> int | str | None:
    return parsed.value if parsed.value is not None else parsed.label


def score(instrument: str, answers: list[CorpusAnswer]) -> Score:
    """Parse every answer with ``instrument`` and count what was read."""
    loaded = load_instrument(instrument)
    result = Score()
    for item in answers:
        parsed = parse_answer(loaded, item.answer)
        got = parsed_value(parsed)
        result.answers += 1
        result.confusion[cell(item.status, item.expected), cell(parsed.status, got)] += 1
        if item.status == "rated":
            result.committed += 1
            if parsed.status == "rated" and got == item.expected:
                result.read += 1
            elif parsed.status == "rated":
                result.wrong.append(item.id)
            else:
                result.missed.append(item.id)
        elif parsed.status == "rated":
            result.false.append(item.id)
    return result
