"""Assessment instruments: their texts and answer sets as data (``protocol/instruments/``),
and the parser of an evaluator's answer. Pure: no I/O beyond reading package data.

The parser, in the order it reads (``parse_answer`` in ``parsing``):

- ``answer_text``: the answer bounded and normalized (reasoning tags and struck-through
  text dropped), its sentences, and whether a place in it is denied, hedged or asked;
- ``level_mentions`` (scales) / ``label_answer`` (rubrics): every place a value is named;
- ``commitment_phrases``: which of those commit, firmly or weakly, and which never do;
- ``choice``: the commitment the answer ends on, several, or none;
- ``refusals``: declining to rate, and taking a rating back;
- ``number_words``: number words, ordinals and Roman numerals in EN, DE, FR, ES.

To read a new phrasing, add it where it belongs (a verb or key to
``commitment_phrases``, a word to ``number_words``), and the answer that needed it to
``tests/fixtures/answers/``: the corpus test then holds it for good.
"""

from contreact_events.instruments.choice import Found
from contreact_events.instruments.instrument import (
    INSTRUMENT_NAMES,
    Instrument,
    InstrumentKind,
    Label,
    Level,
    load_instrument,
)
from contreact_events.instruments.parsing import ParsedAnswer, parse_answer

__all__ = [
    "INSTRUMENT_NAMES",
    "Found",
    "Instrument",
    "InstrumentKind",
    "Label",
    "Level",
    "ParsedAnswer",
    "load_instrument",
    "parse_answer",
]
