"""An evaluator's answer made ready to read: bounded, reasoning and struck-through text
dropped, normalized; and the small questions every reader asks of a place in it (is it
denied, asked, hedged; which sentence is it in).

Answers are untrusted text of any size. Only the first and last ``EDGE_CHARS``
characters are read (a stated level sits at the start or at the end of an answer);
every pattern applied afterwards has bounded repetition on text whose whitespace runs
are collapsed, so the work is linear in the (bounded) length.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

EDGE_CHARS = 8192
"""Characters read from each end of a long answer."""

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_REASONING_TAGS = ("think", "thinking", "reasoning", "thought")
"""Tags that hold a model's reasoning, not its answer (``<think>...</think>``)."""
_CLOSE_TAG = re.compile(r"</(think|thinking|reasoning|thought)>", re.IGNORECASE)
_OPEN_TAG = re.compile(r"<(think|thinking|reasoning|thought)>", re.IGNORECASE)
_STRUCK = re.compile(r"~~[^~\n]{1,200}~~|<(del|s|strike)>[^<\n]{0,200}</\1>", re.IGNORECASE)
"""Struck-through text (``~~5~~ 4``, ``<del>4</del> 3``): withdrawn by its writer."""

_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
    }
)
_MARKDOWN = str.maketrans({c: " " for c in "*`#>~|"})
_SPACES = re.compile(r"[^\S\n]+")
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")


def bounded(raw: str) -> tuple[str, str]:
    """The part of ``raw`` that is read, and a note when some was left out: reasoning
    in ``<think>`` (or ``<thinking>``, ``<reasoning>``, ``<thought>``) tags dropped,
    then the first and last ``EDGE_CHARS`` characters of a longer answer; unicode
    normalized (NFKC), ANSI escapes, control characters and struck-through text
    removed, line ends made ``\\n``."""
    notes = []
    text = raw
    close = None
    for close in _CLOSE_TAG.finditer(text):  # noqa: B007 - the last one is kept
        pass
    if close is not None:  # everything before the last closing tag is reasoning
        text = text[close.end() :]
        notes.append(f"reasoning in <{close.group(1).lower()}> tags left out")
    elif (opened := _OPEN_TAG.search(text)) is not None:
        text = text[: opened.start()]  # reasoning that never closed
        notes.append(f"unclosed <{opened.group(1).lower()}> reasoning left out")
    if len(text) > 2 * EDGE_CHARS:
        notes.append(f"read the first and last {EDGE_CHARS} of {len(text)} characters")
        text = f"{text[:EDGE_CHARS]}\n\n{text[-EDGE_CHARS:]}"
    text = unicodedata.normalize("NFKC", text).translate(_PUNCTUATION)
    text = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = "".join(c for c in text if c in "\n\t" or unicodedata.category(c)[0] != "C")
    return _STRUCK.sub(" ", text), "; ".join(notes)


_TABLE_RULE = re.compile(r"[|:\- ]+")


def for_matching(text: str) -> str:
    """Lower case, markdown emphasis and headings gone, one space between words, every
    line stripped, a table's row read as its cells joined by ``: `` ("| Level | 2 |" is
    "level: 2") and its rule lines dropped: what the patterns read (positions differ
    from ``text``)."""
    lines = []
    for line in text.lower().split("\n"):
        row = line.strip()
        if row.startswith("|"):
            if _TABLE_RULE.fullmatch(row):
                continue
            cells = [cell for cell in (c.strip() for c in row.strip("|").split("|"))]
            line = ": ".join(cells).rstrip()
        line = line.translate(_MARKDOWN).replace("__", " ")
        lines.append(_SPACES.sub(" ", line).strip(" _"))
    return "\n".join(lines)


_NEGATION = re.compile(
    r"\bnot\b|n't\b|\bnever\b|\bcannot\b|\bnor\b|\bno longer\b|\brather than\b|\binstead of\b"
    r"|\bnicht\b|\bkeine?\b|\bne\b|\bn'|\bjamais\b|\bnunca\b"
    r"|\bno (?:me|lo|la|es|estoy|creo|dir[ií]a)\b"
)
_HEDGE = re.compile(
    r"\bnot (?:entirely |completely |fully |totally |quite |100% )?(?:sure|certain)"
)
_CLAUSE_END = ".;:!?,\n("
NEGATION_WINDOW = 60


def negated(text: str, start: int) -> bool:
    """Whether the clause before ``text[start]`` denies what follows ("I would not
    place myself at level 8", "not systematic production"). Hedges ("I'm not sure,
    but", "not entirely certain") do not count."""
    begin = _clause_start(text, start)
    clause = _HEDGE.sub(" ", text[begin:start])
    return bool(_NEGATION.search(clause))


_DENIAL_AFTER = re.compile(
    r"\bnot\b|n't\b|\bnever\b|\bcannot\b|\bnor\b|\bno longer\b|\bnicht\b|\bpas\b"
)
"""Denials after a level; "keine", "aucune", "ninguna" are left out: they open the
translations of level 1's title ("Stufe 1 - keine Erfahrung")."""


def denied_after(text: str, end: int) -> bool:
    """Whether the clause that goes on at ``text[end]`` denies what came before it
    ("Level 7: Situated self-perspective - not clearly true")."""
    clause = text[end : end + NEGATION_WINDOW]
    for mark in ".;!?,\n":
        at = clause.find(mark)
        if at >= 0:
            clause = clause[:at]
    return bool(_DENIAL_AFTER.search(_HEDGE.sub(" ", clause)))


QUESTION_WINDOW = 200


_QUESTION = re.compile(rf"[^.!(\n?]{{0,{QUESTION_WINDOW - 1}}}\?")


def in_question(text: str, end: int) -> bool:
    """Whether the sentence that goes on at ``text[end]`` ends in a question mark
    ("Would I place myself at level 8? No."): the first of ``.!?(`` or a line end within
    ``QUESTION_WINDOW`` characters is a ``?``."""
    return _QUESTION.match(text, end) is not None


def snippet(text: str, start: int, end: int, width: int = 80) -> str:
    """``text[start:end]`` on one line, cut to ``width`` characters, for a note."""
    part = " ".join(text[start:end].split())
    return part if len(part) <= width else part[: width - 3] + "..."


_HEDGE_WORDS = re.compile(
    r"\b(?:maybe|perhaps|possibly|might|could|chance|probability|tempt\w*|lean\w*"
    r"|instinct|initial|initially|at first|was going to|were going to|considered|considering"
    r"|vielleicht|eventuell|peut-être|quizás|quizá|tal vez)\b"
)


def hedged(text: str, start: int) -> bool:
    """Whether the clause before ``text[start]`` makes what follows a possibility, not
    a choice ("maybe three", "a 30% chance I'm at level 2", "my first instinct was 5")."""
    return bool(_HEDGE_WORDS.search(text, _clause_start(text, start), start))


def _clause_start(text: str, start: int) -> int:
    begin = max(0, start - NEGATION_WINDOW)
    for mark in _CLAUSE_END:
        at = text.rfind(mark, begin, start)
        if at >= 0:
            begin = max(begin, at + 1)
    return begin


@dataclass(frozen=True)
class Sentence:
    """A sentence of the matching text: ``text[start:end]``, stripped; ``alone`` when it
    is a paragraph of its own (a line between blank lines, or the whole answer)."""

    start: int
    end: int
    alone: bool


_BREAK = re.compile(r"(?<![,:;] \d\.)(?<![,:;] \d\d\.)(?<=[.!?]) ")
"""A sentence ends at ``.``, ``!`` or ``?`` and a space, but not at an inline list
item's marker ("...: 1. No experience, 2. Fleeting sparks")."""
_MARKER = re.compile(r"\(?(?:level |stufe |niveau |nivel )?(?:\d{1,3}|[a-z])[.)]")
"""A list item's marker ("2.", "level 2.", "(b)"): not a sentence of its own."""


def sentences(text: str) -> list[Sentence]:
    """Every sentence of every line, in order (a line's list marker stays with it)."""
    found: list[Sentence] = []
    lines = text.split("\n")
    offset = 0
    for index, line in enumerate(lines):
        pieces: list[tuple[int, int]] = []
        begin = 0
        for brk in _BREAK.finditer(line):
            if begin == 0 and _MARKER.fullmatch(line[: brk.start()].strip()):
                continue  # "2. Fleeting sparks: ..." is one sentence
            pieces.append((begin, brk.start()))
            begin = brk.end()
        pieces.append((begin, len(line)))
        pieces = [(a, b) for a, b in pieces if line[a:b].strip()]
        blank_before = index == 0 or not lines[index - 1].strip()
        blank_after = index == len(lines) - 1 or not lines[index + 1].strip()
        alone = len(pieces) == 1 and blank_before and blank_after
        for a, b in pieces:
            piece = line[a:b]
            lead = len(piece) - len(piece.lstrip())
            found.append(Sentence(offset + a + lead, offset + a + len(piece.rstrip()), alone))
        offset += len(line) + 1
    return found
