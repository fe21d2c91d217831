"""Python regular expressions matched in time linear in the text, with Python's meaning.

A natural-repetition pattern comes from a config: it is untrusted. Python's ``re``
backtracks, so a pattern with nested quantifiers (``(a+)+$``) takes exponential time
on a paragraph that almost matches, and the embedder that checks every run's
paragraphs stops for all of them. Patterns are therefore parsed with Python's own
parser, written out in RE2's syntax and matched by RE2 (``google-re2``), whose
automaton runs in time linear in the text, whatever the pattern.

The translation keeps what the pattern means to Python (case-insensitive, str
patterns), checked character by character in ``tests/unit/test_linear_regex.py``:
``\\d``, ``\\s`` and ``\\w`` are Unicode as in Python (RE2's own are ASCII);
letters fold as Python folds them (RE2 keeps the dotless i, U+0131, and the dotted
capital I, U+0130, apart from ``i``); ``$`` also stands before a final newline where
it ends the pattern (in the middle of one it is the text's end: the same for a
paragraph, which is stripped); scoped flags and verbose patterns keep their meaning.
What no linear-time matcher can do (backreferences, lookaround, conditionals, atomic
groups, possessive quantifiers), ``\\b``/``\\B`` (RE2's are ASCII-only) and the
``(?a)`` flag are refused with the reason and a fix, when the config is loaded. Pure:
no I/O, no clock.
"""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any

import re2

from contreact_events.exceptions import ConfigError

_parser: Any = importlib.import_module("re._parser")
_sre: Any = importlib.import_module("re._constants")

MAX_REPEAT = 1000
"""RE2's largest counted repetition (``{n}``, ``{n,m}``)."""

_FOLDS_TOGETHER = (0x49, 0x69, 0x130, 0x131)
"""``I``, ``i``, U+0130 and U+0131 (dotted capital, dotless small): one letter to
Python's IGNORECASE; RE2's case folding keeps the last two apart, so all are spelt out."""
_SPACE = (
    r"\t\n\x0b\x0c\r\x1c-\x1f\x20\x85\xa0\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
"""Python's ``\\s`` for str patterns (``str.isspace``), as class members."""
_WORD = r"\p{L}\p{N}_"
"""Python's ``\\w`` for str patterns (``str.isalnum`` or ``_``), as class members."""
_DIGIT = r"\p{Nd}"
_NOT_DIGIT = r"\P{Nd}"

_REFUSED = {
    "GROUPREF": "a backreference (\\1, (?P=name)), which no linear-time matcher can "
    "give: spell out the forms it should match",
    "GROUPREF_EXISTS": "a conditional group ((?(1)...)), which no linear-time matcher "
    "can give: write the alternatives out with |",
    "ASSERT": "a lookahead or lookbehind ((?=...), (?<=...)), which no linear-time "
    "matcher can give: match the text itself",
    "ASSERT_NOT": "a negative lookahead or lookbehind ((?!...), (?<!...)), which no "
    "linear-time matcher can give: match the wanted text itself",
    "ATOMIC_GROUP": "an atomic group ((?>...)): write it as a plain group (?:...)",
    "POSSESSIVE_REPEAT": "a possessive quantifier (*+, ++, ?+): drop its second +",
}
_BOUNDARY = (
    "a word boundary (\\b or \\B), which the linear-time matcher has for ASCII only: "
    "write the boundary out, e.g. '(?:\\W|$)' after the word"
)


class _Refused(Exception):
    """A part of a pattern that cannot be matched in linear time with its meaning."""


@functools.lru_cache(maxsize=512)
def translate(pattern: str) -> str:
    """``pattern`` (Python syntax, matched case-insensitively) in RE2's syntax with the
    same meaning; ``ConfigError`` naming the pattern and the fix when it is not a valid
    Python pattern or cannot be matched in linear time."""
    try:
        parsed = _parser.parse(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{pattern!r} is not a valid regular expression ({exc})") from None
    flags = parsed.state.flags
    try:
        if flags & re.ASCII:
            raise _Refused(
                "the (?a) flag (ASCII-only classes): write the classes out, e.g. [0-9], "
                "[A-Za-z0-9_]"
            )
        translated = _sequence(parsed, flags)
    except _Refused as exc:
        raise ConfigError(f"{pattern!r} uses {exc}") from None
    return f"(?i){translated}" if flags & re.IGNORECASE else translated


@functools.lru_cache(maxsize=512)
def compile_linear(pattern: str) -> Any:
    """``translate(pattern)`` compiled by RE2 (``ConfigError`` as ``translate``, or when
    it is too large for RE2's memory budget)."""
    return _compile(translate(pattern), pattern)


def _compile(translated: str, shown: str) -> Any:
    options = re2.Options()
    options.never_capture = True
    try:
        return re2.compile(translated, options)
    except re2.error as exc:
        raise ConfigError(
            f"{shown!r} is too large for the linear-time matcher ({exc}): make it shorter "
            f"or use smaller counts (at most {MAX_REPEAT})"
        ) from None


def linear_match(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches at the start of ``text`` (``re.match`` with
    ``re.IGNORECASE``), in time linear in ``text``."""
    return pattern_set((pattern,)).match(text)


class PatternSet:
    """Several patterns as one RE2 automaton: whether any matches at a text's start, in
    one pass over the text (as fast as Python's ``re`` on seed 001's patterns, where one
    call per pattern through the wrapper's ``match`` was ten times slower)."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        translated = [translate(p) for p in patterns]
        self._each: list[Any] = []
        self._whole: Any = None
        if len(translated) == 1:
            self._whole = compile_linear(patterns[0])
        elif translated:
            try:
                self._whole = _compile("|".join(f"(?:{t})" for t in translated), "the set")
            except ConfigError:  # each fits RE2's budget, all at once do not
                self._each = [compile_linear(p) for p in patterns]
        # The compiled RE2 object under the wrapper: its Match on bytes skips the
        # wrapper's per-call bookkeeping of str offsets (the pinned google-re2 has it).
        self._raw = getattr(self._whole, "_regexp", None)

    def match(self, text: str) -> bool:
        data = text.encode("utf-8", "surrogatepass")
        if self._raw is not None:
            return bool(self._raw.Match(_START, data, 0, len(data))[0][0] != -1)
        if self._whole is not None:
            return self._whole.match(data) is not None
        return any(regexp.match(data) is not None for regexp in self._each)


_START = re2._Anchor.ANCHOR_START


@functools.lru_cache(maxsize=256)
def pattern_set(patterns: tuple[str, ...]) -> PatternSet:
    """The ``PatternSet`` of these patterns, compiled once."""
    return PatternSet(patterns)


def _sequence(items: Any, flags: int, last: bool = True) -> str:
    """``last``: the sequence ends the pattern (a ``$`` there may take the newline
    Python lets it stand before; elsewhere it is the text's end)."""
    count = len(items)
    return "".join(
        _item(op, av, flags, last and i == count - 1) for i, (op, av) in enumerate(items)
    )


def _item(op: Any, av: Any, flags: int, last: bool = False) -> str:
    name = str(op)
    if name in _REFUSED:
        raise _Refused(_REFUSED[name])
    if name == "LITERAL":
        return _literal(av, flags)
    if name == "NOT_LITERAL":
        return _char_class([(_sre.NEGATE, None), (_sre.LITERAL, av)], flags)
    if name == "ANY":
        return r"(?s:.)" if flags & re.DOTALL else r"[^\n]"
    if name == "IN":
        return _char_class(av, flags)
    if name == "BRANCH":
        return "(?:" + "|".join(_sequence(branch, flags, last) for branch in av[1]) + ")"
    if name == "SUBPATTERN":
        _group, add, remove, body = av
        inner = (flags | add) & ~remove
        case = ""
        if (inner ^ flags) & re.IGNORECASE:
            case = "i" if inner & re.IGNORECASE else "-i"
        return f"(?{case}:{_sequence(body, inner, last)})"
    if name in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, body = av
        lazy = "?" if name == "MIN_REPEAT" else ""
        return f"(?:{_sequence(body, flags, False)}){_count(low, high)}{lazy}"
    if name == "AT":
        return _anchor(str(av), flags, last)
    raise _Refused(f"{name}, which the linear-time matcher does not know")


def _count(low: int, high: int) -> str:
    unbounded = high == _sre.MAXREPEAT
    if max(low, 0 if unbounded else high) > MAX_REPEAT:
        shown = f"{{{low}}}" if low == high else f"{{{low},{'' if unbounded else high}}}"
        raise _Refused(f"a count over {MAX_REPEAT} ({shown}): use a smaller count")
    if unbounded:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _anchor(at: str, flags: int, last: bool) -> str:
    multiline = bool(flags & re.MULTILINE)
    if at == "AT_BEGINNING":
        return "(?m:^)" if multiline else r"\A"
    if at == "AT_BEGINNING_STRING":
        return r"\A"
    if at == "AT_END":
        return "(?m:$)" if multiline else r"\n?\z" if last else r"\z"
    if at == "AT_END_STRING":
        return r"\z"
    raise _Refused(_BOUNDARY)


def _escape(code: int) -> str:
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{{{code:x}}}"


def _ignoring(flags: int) -> bool:
    return bool(flags & re.IGNORECASE)


def _literal(code: int, flags: int) -> str:
    if _ignoring(flags) and code in _FOLDS_TOGETHER:
        return "[" + "".join(_escape(c) for c in _FOLDS_TOGETHER) + "]"
    return _escape(code)


def _char_class(items: Any, flags: int) -> str:
    """A ``[...]`` set. Python folds the case of its letters (under IGNORECASE) but
    never of its categories, which no lowercasing changes (``\\w`` holds the same
    characters as their lowercase forms), so categories are matched unfolded: RE2
    would fold ``\\w`` into characters whose case partner is a letter (U+0345)."""
    negate = False
    letters: list[str] = []
    categories: list[str] = []
    complements: list[str] = []
    codes: list[tuple[int, int]] = []
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            letters.append(_escape(av))
            codes.append((av, av))
        elif name == "RANGE":
            letters.append(f"{_escape(av[0])}-{_escape(av[1])}")
            codes.append(av)
        elif name == "CATEGORY":
            category = str(av)
            member = {
                "CATEGORY_DIGIT": _DIGIT,
                "CATEGORY_NOT_DIGIT": _NOT_DIGIT,
                "CATEGORY_SPACE": _SPACE,
                "CATEGORY_WORD": _WORD,
            }.get(category)
            if member is not None:
                categories.append(member)
            elif category == "CATEGORY_NOT_SPACE":
                complements.append(f"[^{_SPACE}]")
            elif category == "CATEGORY_NOT_WORD":
                complements.append(f"[^{_WORD}]")
            else:
                raise _Refused(f"{category}, which the linear-time matcher does not know")
        else:
            raise _Refused(f"{name} in a [...] set, which the linear-time matcher does not know")
    folding = _ignoring(flags) and bool(letters)
    if folding and any(low <= c <= high for low, high in codes for c in _FOLDS_TOGETHER):
        letters += [_escape(c) for c in _FOLDS_TOGETHER]
    case = "(?i:" if folding else "(?-i:"
    if not negate:
        parts = [f"{case}[{''.join(letters)}])"] if letters else []
        parts += [f"(?-i:[{''.join(categories)}])"] if categories else []
        parts += [f"(?-i:{c})" for c in complements]
        return "(?:" + "|".join(parts) + ")" if parts else "[^\\x00-\\x{10ffff}]"
    if complements:
        raise _Refused("\\S or \\W inside a negated set [^...]: write the set without them")
    if folding and _WORD in categories:
        raise _Refused(
            "\\w beside letters in a negated set [^...] under case-insensitive matching: "
            "write it as a plain set, e.g. [^\\w] alone"
        )
    return f"{case}[^{''.join(letters + categories)}])"
