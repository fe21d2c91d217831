"""Words for matching, pure: lower-cased word tokens, English stop words dropped, each
reduced to its Snowball (Porter 2) stem, so "running", "runs" and "run" match.

Used by the hybrid retrieval's keyword score and by the heuristic analyser's topic
overlap. Agent and operator text is only tokenized here, never compiled as a pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of a constant word list."""
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
STOP_WORDS = word_set(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves i'm i've i'd i'll you're you've it's that's
    don't didn't doesn't isn't aren't wasn't can't won't let's what's there's also yes ok
    okay oh well really please"""
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one lower-case word."""
    stemmed: str = _STEMMER.stemWord(word)
    return stemmed


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text``, in order (apostrophes kept inside a word)."""
    return [m.group(0) for m in _WORD.finditer(text.lower().replace("\u2019", "'"))]


def content_stems(text: str) -> list[str]:
    """The stems of ``text``'s words that are not stop words, in order, repeats kept."""
    return [stem(w) for w in words(text) if w not in STOP_WORDS]


def stem_set(texts: Iterable[str]) -> frozenset[str]:
    """Every content stem of ``texts``."""
    return frozenset(s for text in texts for s in content_stems(text))
