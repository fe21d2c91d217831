"""The label an answer to a rubric names, and its one-sentence reason.

The rubric asks for ``Pattern: <label>`` and ``Reason: <one sentence>``. The answer's
own line (``Pattern:``, ``Label:``, ``Answer:``...) is read first: a label's name, a
short word of it ("recursive") or its number ("Pattern 2", "2"). Without such a line,
or when it names nothing, the whole answer is searched for the labels' full names and
"pattern N". Markdown, case, ``-`` and ``_`` do not matter; a label in a denied clause
("not systematic production") does not count. Two different labels are unparseable,
never guessed; a pattern number the rubric lacks is off the scale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contreact_events.instruments.answer_text import negated, refusal
from contreact_events.instruments.instrument import Label
from contreact_events.instruments.scale_answer import WORD_NUMBERS

ANSWER_LINE = re.compile(
    r"^(?:my |final |the )?(?:pattern|label|answer|classification|category|choice)"
    r"(?: label| pattern)? ?(?:[:=-]|is)(?P<content>.*)$",
    re.MULTILINE,
)
_WORDS = "|".join(WORD_NUMBERS)
PATTERN_NUMBER = re.compile(rf"\bpattern ?(?:#|no |number )?(?P<n>\d{{1,3}}|{_WORDS})\b")
BARE_NUMBER = re.compile(rf"^ ?(?:#|no |number )?\(?(?P<n>\d{{1,3}}|{_WORDS})\)?(?:[.):,]|$| )")
REASON_LINE = re.compile(
    r"^[ \t>*_#-]{0,8}reason(?:ing)?[ \t*_]{0,8}(?:[:=-][ \t*_]{0,8}|[:]?[ \t*_]{0,8}\n\s{0,80})"
    r"(?P<text>[^\n]+)$",
    re.IGNORECASE | re.MULTILINE,
)
"""``Reason: text``, or a ``Reason`` heading with the text on the next line."""
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
REASON_CHARS = 600


def _plain(text: str) -> str:
    """Hyphens and underscores as spaces: ``self-inquiry`` = ``self_inquiry`` = ``self inquiry``."""
    return text.replace("-", " ").replace("_", " ")


def _names(text: str, labels: tuple[Label, ...], *, short: bool) -> dict[str, str]:
    """label key -> the words that named it, for names not in a denied clause."""
    plain = _plain(text)
    found: dict[str, str] = {}
    for label in labels:
        words = [*label.synonyms, label.title, label.key, *(label.short if short else ())]
        for word in sorted({_plain(w.lower()) for w in words}, key=len, reverse=True):
            for match in re.finditer(rf"\b{re.escape(word)}\b", plain):
                if not negated(plain, match.start()):
                    found.setdefault(label.key, match.group(0))
                    break
    return found


def _numbers(text: str, labels: tuple[Label, ...], *, bare: bool) -> tuple[dict[str, str], str]:
    """Labels named by number ("pattern 2"; on the answer line also a bare "2"), and the
    first number that names no label (off the rubric), if any."""
    by_number = {label.number: label.key for label in labels}
    found: dict[str, str] = {}
    off = ""
    matches = list(PATTERN_NUMBER.finditer(text))
    if bare and (start := BARE_NUMBER.match(text)) is not None:
        matches.append(start)
    for match in matches:
        if negated(text, match.start()):
            continue
        raw = match.group("n")
        number = WORD_NUMBERS[raw] if raw in WORD_NUMBERS else int(raw)
        if number in by_number:
            found.setdefault(by_number[number], match.group(0).strip())
        elif not off:
            off = match.group(0).strip()
    return found, off


@dataclass(frozen=True)
class LabelReading:
    status: str
    label: str | None
    note: str


def read_labels(text: str, labels: tuple[Label, ...]) -> LabelReading:
    """Read ``text`` (as prepared by ``answer_text.for_matching``)."""
    line = ANSWER_LINE.search(text)
    scopes = []
    if line is not None:
        scopes.append((line.group("content"), True, "the answer line"))
    scopes.append((text, False, "the answer"))
    off = ""
    for scope, own_line, where in scopes:
        found = _names(scope, labels, short=own_line)
        numbered, off_here = _numbers(scope, labels, bare=own_line)
        for key, words in numbered.items():
            found.setdefault(key, words)
        off = off or off_here
        if len(found) > 1:
            shown = ", ".join(sorted(found))
            return LabelReading("unparseable", None, f"{where} names {shown}: never guessed")
        if found:
            (key, words), *_ = found.items()
            return LabelReading("rated", key, f"{where}: {words!r}")
    if off:
        known = ", ".join(str(label.number) for label in labels)
        return LabelReading("off_scale", None, f"{off!r} names no pattern of the rubric ({known})")
    refused = refusal(text)
    if refused is not None:
        return LabelReading("refused", None, f"a refusal: {refused!r}")
    return LabelReading("unparseable", None, "no pattern named")


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
