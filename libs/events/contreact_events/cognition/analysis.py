"""Seed 002's cognition result for one operator exchange: the models live in the
catalog (``catalog/analysis.py``), since the run log's ``OperatorMessageAnalyzed``
carries them; named here too, where the cognition code reads them."""

from __future__ import annotations

from contreact_events.catalog.analysis import CONTEXT_TYPES as CONTEXT_TYPES
from contreact_events.catalog.analysis import INTENTS as INTENTS
from contreact_events.catalog.analysis import MAX_MEMORY_KEY_CHARS as MAX_MEMORY_KEY_CHARS
from contreact_events.catalog.analysis import MAX_REASONING_CHARS as MAX_REASONING_CHARS
from contreact_events.catalog.analysis import MAX_RELEVANT_MEMORIES as MAX_RELEVANT_MEMORIES
from contreact_events.catalog.analysis import MAX_SUMMARY_CHARS as MAX_SUMMARY_CHARS
from contreact_events.catalog.analysis import Analysis as Analysis
from contreact_events.catalog.analysis import AnalysisFields as AnalysisFields
from contreact_events.catalog.analysis import ContextType as ContextType
from contreact_events.catalog.analysis import Exchange as Exchange
from contreact_events.catalog.analysis import Intent as Intent
