"""Assessment instruments: their texts and answer sets as data (``protocol/instruments/``),
and the parser of an evaluator's answer. Pure: no I/O beyond reading package data."""

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
    "Instrument",
    "InstrumentKind",
    "Label",
    "Level",
    "ParsedAnswer",
    "load_instrument",
    "parse_answer",
]
