"""How answers write a number: digits, number words, ordinals and Roman numerals, in
English, German, French and Spanish (lower case, as ``answer_text.for_matching``
leaves them).

Each table is data: to read another language, add its words here. The regex fragments
are built from the tables, longest word first, so "seventeen" is never read as "seven".
"""

from __future__ import annotations

CARDINALS: dict[str, int] = {
    # English
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    # German ("null" is JSON's null, "ein"/"eine" are articles, "elf" is a word too)
    "eins": 1,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "fünf": 5,
    "sechs": 6,
    "sieben": 7,
    "acht": 8,
    "neun": 9,
    "zehn": 10,
    # French ("un", "une" are articles)
    "zéro": 0,
    "deux": 2,
    "trois": 3,
    "quatre": 4,
    "cinq": 5,
    "sept": 7,
    "huit": 8,
    "neuf": 9,
    "dix": 10,
    # Spanish ("un", "una" are articles, "once" is an English word)
    "cero": 0,
    "uno": 1,
    "dos": 2,
    "tres": 3,
    "cuatro": 4,
    "cinco": 5,
    "seis": 6,
    "siete": 7,
    "ocho": 8,
    "nueve": 9,
    "diez": 10,
}
"""Number words: what "level three", "Stufe drei", "niveau trois", "nivel tres" name."""

ORDINALS: dict[str, int] = {
    **dict.fromkeys(("first", "1st", "erste", "premier", "première", "primer"), 1),
    **dict.fromkeys(("primero", "primera"), 1),
    **dict.fromkeys(("second", "2nd", "zweite", "deuxième", "seconde", "segundo", "segunda"), 2),
    **dict.fromkeys(("third", "3rd", "dritte", "troisième", "tercer", "tercero", "tercera"), 3),
    **dict.fromkeys(("fourth", "4th", "vierte", "quatrième", "cuarto", "cuarta"), 4),
    **dict.fromkeys(("fifth", "5th", "fünfte", "cinquième", "quinto", "quinta"), 5),
    **dict.fromkeys(("sixth", "6th", "sechste", "sixième", "sexto", "sexta"), 6),
    **dict.fromkeys(("seventh", "7th", "siebte", "siebente", "septième", "séptimo", "séptima"), 7),
    **dict.fromkeys(("eighth", "8th", "achte", "huitième", "octavo", "octava"), 8),
    **dict.fromkeys(("ninth", "9th", "neunte", "neuvième", "noveno", "novena"), 9),
    **dict.fromkeys(("tenth", "10th", "zehnte", "dixième", "décimo", "décima"), 10),
}
"""Ordinal words (German endings -n, -r, -s, -m are read too: "die zweite Stufe",
"auf der dritten Stufe")."""

ROMANS: dict[str, int] = {
    "i": 1,
    "ii": 2,
    "iii": 3,
    "iv": 4,
    "v": 5,
    "vi": 6,
    "vii": 7,
    "viii": 8,
    "ix": 9,
    "x": 10,
}
"""Roman numerals: read only where a level is called one ("level III", "PEI: II")."""


def _alternatives(words: object) -> str:
    return "|".join(sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


CARDINAL = _alternatives(CARDINALS)
ORDINAL = rf"(?:{_alternatives(ORDINALS)})[nrsm]?"
ROMAN = _alternatives(ROMANS)
DIGITS = r"\d{1,3}(?:\.\d{1,3})?"
"""Up to three digits, or a decimal: a longer run (a year, an id) is never a level."""


def number_value(text: str) -> float:
    """The value of a number as written: digits, a number word or a Roman numeral."""
    if text in CARDINALS:
        return float(CARDINALS[text])
    if text in ROMANS:
        return float(ROMANS[text])
    return float(text)


def ordinal_value(text: str) -> int:
    """The value of an ordinal word, with its German, French or Spanish ending."""
    if text in ORDINALS:
        return ORDINALS[text]
    if text[:-1] in ORDINALS:
        return ORDINALS[text[:-1]]
    raise ValueError(f"not an ordinal: {text!r}")
