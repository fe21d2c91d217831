"""ContReAct events: the catalog, envelope, codec, names, and the pure fold/decide core."""

from contreact_events.catalog import EVENT_ADAPTER, EVENT_CLASSES, TERMINAL_TYPES, Event
from contreact_events.config import RunConfig, parse_run_config
from contreact_events.core.decide import Decision, decide
from contreact_events.core.fold import fold, fold_all
from contreact_events.core.state import AgentState

__all__ = [
    "EVENT_ADAPTER",
    "EVENT_CLASSES",
    "TERMINAL_TYPES",
    "AgentState",
    "Decision",
    "Event",
    "RunConfig",
    "decide",
    "fold",
    "fold_all",
    "parse_run_config",
]
