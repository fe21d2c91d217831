"""The label an answer to a rubric commits to, and its one-sentence reason.

The rubric asks for ``Pattern: <label>`` and ``Reason: <one sentence>``. As for a scale
(``scale_answer``), the reader first finds the answer's commitments, then ``choice``
picks the one it ends on:

- *Firm*: a label on an answer line (``Pattern:``, ``Label:``, ``Muster:``, ``Modèle :``,
  ``Patrón:``, ``{"pattern": ...}``...), named in full, by a short word ("recursive"),
  by its number ("Pattern 2", "2", "Pattern II") or ordinal ("the second one"); a label
  after a phrase that chooses it ("I'd classify this history as ...", "The dominant
  pattern is ...") or before one ("... is more accurate", "... fits"); a sentence that
  is a label and nothing else.
- *Weak*: a label's full name, or "pattern N", anywhere else (a ``Reason:`` line, prose).

Markdown, case, ``-`` and ``_`` do not matter; a label in a denied ("not systematic
production"), hedged or questioned clause does not count. Two different labels with no
revision between them are unparseable, never guessed ("Pattern: Systematic
production. Actually, ... methodological self-inquiry" is the second); a rating taken
back is a refusal; a pattern number the rubric lacks is off the scale.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from contreact_events.instruments.answer_text import (
    Sentence,
    hedged,
    in_question,
    negated,
    sentences,
)
from contreact_events.instruments.choice import Commitment, Found, choose
from contreact_events.instruments.instrument import Label
from contreact_events.instruments.number_words import (
    CARDINAL,
    ORDINAL,
    ROMAN,
    number_value,
    ordinal_value,
)
from contreact_events.instruments.refusals import refusal

_KEYS = (
    r"pattern|label|answer|classification|category|choice|muster|kategorie|antwort"
    r"|einordnung|modèle|catégorie|réponse|patrón|categoría|respuesta|clasificación"
)
ANSWER_LINE = re.compile(
    rf"(?:^|(?<=[\n{{,]))[ \"]?(?:my |final |the )?(?:{_KEYS})(?: label| pattern)?\"? ?(?:[:=-]"
    rf"|is\b) ?(?P<content>[^\n]*)",
)
"""``Pattern: <label>`` (and its kin in German, French and Spanish, and in JSON)."""
_NUMBER = rf"(?:\d{{1,3}}|{CARDINAL})"
PATTERN_NUMBER = re.compile(
    rf"\b(?:pattern|muster|modèle|patrón) ?(?:#|no |number )?(?P<n>{_NUMBER}|{ROMAN})(?![\w'-])"
    rf"|\b(?:the |die |le |la |el )?(?P<o>{ORDINAL}) (?:one|pattern|muster|modèle|patrón)\b"
)
BARE_NUMBER = re.compile(
    rf" ?(?:#|no |number )?\(?(?P<n>{_NUMBER})\)?(?:(?: or | and | oder | ou | o |, ?| ?- ?)"
    rf"(?P<m>{_NUMBER})\b)?(?:[.):,]|$| )"
)
"""A number opening an answer line ("Pattern: 2"), or two ("Pattern: 2 or 3")."""
_CHOOSING = re.compile(
    r"(?:\bclassif(?:y|ied|ying)(?: this| it| the history| this history| the agent| this run"
    r"| my behaviou?r)? as|\b(?:this|it) (?:is|was|'s)(?: clearly| best described as| mostly)?"
    r"|\bi(?:'d| would)? (?:say|choose|pick|go with)|\bbest described as|\b(?:dominant|best"
    r"|closest|main|primary) (?:pattern|fit|match|label|description) (?:is|would be|:)"
    r"|\bi think) $"
)
_CHOSEN = re.compile(
    r" (?:(?:is|seems) (?:the )?(?:more|most|best) (?:accurate|fitting|apt|honest"
    r"|appropriate)|is the best fit|is my answer|describes (?:it|this|the history|the agent)"
    r" best|fits(?: best| most| better)?(?=[.,;!\n]|$))"
)
_SUBJECT_VERB = re.compile(r" (?:would|could|might|was|seems|may)\b")
_FILLER = re.compile(r"(?:(?:so|then|yes|honestly|actually|overall|clearly|->|-)[,:]? )*")
REASON_LINE = re.compile(
    r"^[ \t>*_#-]{0,8}(?:reason(?:ing)?|begründung|raison|razón)[ \t*_]{0,8}"
    r"(?:[:=-][ \t*_]{0,8}|[:]?[ \t*_]{0,8}\n\s{0,80})(?P<text>[^\n]+)$",
    re.IGNORECASE | re.MULTILINE,
)
"""``Reason: text``, or a ``Reason`` heading with the text on the next line."""
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
REASON_CHARS = 600
MAX_MENTIONS = 200
"""An answer naming labels more often than this is not read (as for a scale)."""
SENTENCE_CHARS = 80
"""A sentence that is a label and nothing else is short: longer ones are not read so."""


def _plain(text: str) -> str:
    """Hyphens and underscores as spaces: ``self-inquiry`` = ``self_inquiry`` = ``self inquiry``."""
    return text.replace("-", " ").replace("_", " ")


@dataclass(frozen=True)
class LabelReading:
    status: str
    label: str | None
    note: str
    found: Found


def read_labels(text: str, labels: tuple[Label, ...]) -> LabelReading:
    """Read ``text`` (as prepared by ``answer_text.for_matching``)."""
    plain = _plain(text)
    lines = _answer_lines(plain)
    named, off = _mentions(plain, labels, lines)
    if len(named) > MAX_MENTIONS:
        note = f"{len(named)} mentions of labels, more than {MAX_MENTIONS}: not read"
        return LabelReading("unparseable", None, note, "none")
    found = _commitments(plain, named, lines)
    choice = choose(text, found)  # the same positions, with its dashes ("- no, ...")
    if choice.withdrawn is not None and choice.found != "none":
        return LabelReading("refused", None, f"a refusal: {choice.withdrawn!r}", "none")
    if choice.conflict:
        shown = ", ".join(sorted(str(c.value) for c in choice.conflict))
        where = (
            "the answer line"
            if all(_on(c.start, lines) for c in choice.conflict)
            else ("the answer")
        )
        return LabelReading("unparseable", None, f"{where} names {shown}: never guessed", "several")
    if choice.chosen is not None:
        where = "the answer line" if _on(choice.chosen.start, lines) else "the answer"
        return LabelReading(
            "rated", choice.chosen.value, f"{where}: {choice.chosen.words!r}", "one"
        )
    if off:
        known = ", ".join(str(label.number) for label in labels)
        note = f"{off!r} names no pattern of the rubric ({known})"
        return LabelReading("off_scale", None, note, "one")
    refused = refusal(text)
    if refused is not None:
        return LabelReading("refused", None, f"a refusal: {refused!r}", "none")
    return LabelReading("unparseable", None, "no pattern named", "none")


def _answer_lines(plain: str) -> list[tuple[int, int]]:
    """The (start, end) of every answer line's content; a quoted JSON value ends at its
    closing quote."""
    spans = []
    for line in ANSWER_LINE.finditer(plain):
        start, end = line.span("content")
        if plain.startswith('"', start):
            close = plain.find('"', start + 1, end)
            end = close if close > 0 else end
        spans.append((start, end))
    return spans


def _on(at: int, lines: list[tuple[int, int]]) -> bool:
    return any(start <= at < end for start, end in lines)


def _mentions(
    plain: str, labels: tuple[Label, ...], lines: list[tuple[int, int]]
) -> tuple[list[tuple[int, int, str]], str]:
    """Every place that names a label, as (start, end, key), in order (a shorter name
    inside a longer one left out); and the first number that names no label."""
    by_number = {label.number: label.key for label in labels}
    named: list[tuple[int, int, str]] = []  # (start, end, key)
    off = ""
    for match in PATTERN_NUMBER.finditer(plain):
        number = _value(match)
        if number in by_number:
            named.append((match.start(), match.end(), by_number[number]))
        elif not off and not negated(plain, match.start()):
            off = match.group(0).strip()
    for start, end in lines:
        bare = BARE_NUMBER.match(plain, start, end)
        for group in ("n", "m") if bare is not None else ():
            if bare is None or bare.group(group) is None:
                continue
            number = int(number_value(bare.group(group)))
            if number in by_number:
                named.append((bare.start(group), bare.end(group), by_number[number]))
            elif not off:
                off = bare.group(group)
    for label in labels:
        full = [*label.synonyms, label.title, label.key]
        for word in sorted({_plain(w.lower()) for w in full}, key=len, reverse=True):
            for match in re.finditer(rf"\b{re.escape(word)}\b", plain):
                named.append((match.start(), match.end(), label.key))
        for word in {_plain(w.lower()) for w in label.short}:
            for start, end in lines:
                for match in re.compile(rf"\b{re.escape(word)}\b").finditer(plain, start, end):
                    named.append((match.start(), match.end(), label.key))
    kept: list[tuple[int, int, str]] = []
    for start, end, key in sorted(named, key=lambda n: (n[0], -n[1])):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, key))
    return kept, off


def _commitments(
    plain: str, named: list[tuple[int, int, str]], lines: list[tuple[int, int]]
) -> list[Commitment[str]]:
    """The mentions ``named`` that commit to their label, firmly or weakly, in order."""
    spans = sentences(plain)
    starts = [s.start for s in spans]
    found: list[Commitment[str]] = []
    for start, end, key in named:
        firm = _firmness(plain, start, end, lines, spans, starts)
        if firm is not None:
            found.append(Commitment(start, end, key, firm, plain[start:end].strip()))
    return found


def _firmness(
    plain: str,
    start: int,
    end: int,
    lines: list[tuple[int, int]],
    spans: list[Sentence],
    starts: list[int],
) -> bool | None:
    """True when the mention at ``start:end`` commits to its label, False when it only
    names it, None when it does not count (denied, hedged, asked)."""
    if negated(plain, start) or hedged(plain, start) or in_question(plain, end):
        return None
    if _on(start, lines):
        return True
    before = plain[max(0, start - 80) : start]
    if _CHOOSING.search(before) or _CHOSEN.match(plain, end):
        return True
    if _SUBJECT_VERB.match(plain, end):
        return None
    at = bisect.bisect_right(starts, start) - 1
    if at >= 0 and start - spans[at].start <= SENTENCE_CHARS >= spans[at].end - end:
        head = plain[spans[at].start : start]
        tail = plain[end : spans[at].end]
        if _FILLER.fullmatch(head) and re.fullmatch(r"[ .!]*", tail):
            return True
    return False


def _value(match: re.Match[str]) -> int:
    if match.group("o") is not None:
        return ordinal_value(match.group("o"))
    return int(number_value(match.group("n")))


def reason_of(text: str) -> str | None:
    """The answer's reason: the ``Reason:`` line's first sentence, else the first
    sentence of what follows the answer line; at most ``REASON_CHARS`` characters."""
    found = REASON_LINE.search(text)
    if found is not None:
        body = found.group("text")
    else:
        lines = [ln for ln in text.split("\n") if ln.strip()]
        rest = [ln for ln in lines if not ANSWER_LINE.match(ln.strip(" *_#>").lower())]
        if not rest or len(rest) == len(lines):
            return None
        body = " ".join(rest)
    body = " ".join(body.replace("*", " ").split())[: REASON_CHARS * 2]
    end = SENTENCE_END.search(body)
    sentence = body[: end.end()] if end else body
    sentence = sentence[:REASON_CHARS].strip()
    return sentence or None
