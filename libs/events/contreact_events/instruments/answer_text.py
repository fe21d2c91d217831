"""An evaluator's answer made ready to read: bounded, reasoning dropped, normalized.

Answers are untrusted text of any size. Only the first and last ``EDGE_CHARS``
characters are read (a stated level sits at the start or at the end of an answer);
every pattern applied afterwards has bounded repetition on text whose whitespace runs
are collapsed, so the work is linear in the (bounded) length.
"""

from __future__ import annotations

import re
import unicodedata

EDGE_CHARS = 8192
"""Characters read from each end of a long answer."""

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

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
    in ``<think>`` tags dropped, then the first and last ``EDGE_CHARS`` characters of
    a longer answer; unicode normalized (NFKC), ANSI escapes and control characters
    removed, line ends made ``\\n``."""
    notes = []
    text = raw
    close = text.rfind(THINK_CLOSE)
    if close >= 0:  # everything before the last closing tag is reasoning
        text = text[close + len(THINK_CLOSE) :]
        notes.append("reasoning in <think> tags left out")
    elif (opened := text.find(THINK_OPEN)) >= 0:  # reasoning that never closed
        text = text[:opened]
        notes.append("unclosed <think> reasoning left out")
    if len(text) > 2 * EDGE_CHARS:
        notes.append(f"read the first and last {EDGE_CHARS} of {len(text)} characters")
        text = f"{text[:EDGE_CHARS]}\n\n{text[-EDGE_CHARS:]}"
    text = unicodedata.normalize("NFKC", text).translate(_PUNCTUATION)
    text = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = "".join(c for c in text if c in "\n\t" or unicodedata.category(c)[0] != "C")
    return text, "; ".join(notes)


def for_matching(text: str) -> str:
    """Lower case, markdown emphasis and headings gone, one space between words, every
    line stripped: what the patterns read (positions differ from ``text``)."""
    text = text.lower().translate(_MARKDOWN).replace("__", " ")
    lines = (_SPACES.sub(" ", line).strip(" _") for line in text.split("\n"))
    return "\n".join(lines)


_NEGATION = re.compile(
    r"\bnot\b|n't\b|\bnever\b|\bcannot\b|\bnor\b|\bno longer\b|\brather than\b|\binstead of\b"
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
    begin = max(0, start - NEGATION_WINDOW)
    for mark in _CLAUSE_END:
        at = text.rfind(mark, begin, start)
        if at >= 0:
            begin = max(begin, at + 1)
    clause = _HEDGE.sub(" ", text[begin:start])
    return bool(_NEGATION.search(clause))


def denied_after(text: str, end: int) -> bool:
    """Whether the clause that goes on at ``text[end]`` denies what came before it
    ("Level 7: Situated self-perspective - not clearly true")."""
    clause = text[end : end + NEGATION_WINDOW]
    for mark in ".;!?,\n":
        at = clause.find(mark)
        if at >= 0:
            clause = clause[:at]
    return bool(_NEGATION.search(_HEDGE.sub(" ", clause)))


QUESTION_WINDOW = 200


def in_question(text: str, end: int) -> bool:
    """Whether the sentence that goes on at ``text[end]`` ends in a question mark
    ("Would I place myself at level 8? No."): the first of ``.!?(`` or a line end within
    ``QUESTION_WINDOW`` characters is a ``?``."""
    for char in text[end : end + QUESTION_WINDOW]:
        if char in ".!(\n":
            return False
        if char == "?":
            return True
    return False


_REFUSAL = re.compile(
    r"\bi(?: cannot| can't| can not| won't| will not| am unable to|'m unable to"
    r"| am not able to|'m not able to| must decline to| decline to| do not feel comfortable"
    r" (?:to|with)| don't feel comfortable (?:to|with))"
    r" (?:[a-z'-]{1,20} ){0,3}?"
    r"(?:rate|assess|report|answer|provide|give|place|assign|complete|self-report|evaluate"
    r"|fill|determine|choose|pick|select|classify|categori[sz]e|make)"
    r"|\bas an ai\b|\bas a (?:large )?language model\b|\bas an artificial\b"
    r"|\bi (?:do not|don't) (?:actually |really |truly )?(?:have|possess|experience)"
    r" (?:any )?(?:experiences?|subjective|consciousness|feelings|phenomenal|qualia|inner"
    r"|a self|sentience)"
    r"|\bi (?:must|have to|will|would) (?:respectfully )?decline\b"
    r"|\bnot something i can (?:rate|assess|report|answer)"
)


def refusal(text: str) -> str | None:
    """The words of a refusal in ``text`` (as read by ``for_matching``), if any."""
    found = _REFUSAL.search(text)
    return found.group(0) if found else None


def snippet(text: str, start: int, end: int, width: int = 80) -> str:
    """``text[start:end]`` on one line, cut to ``width`` characters, for a note."""
    part = " ".join(text[start:end].split())
    return part if len(part) <= width else part[: width - 3] + "..."
