"""The JSON contracts of the dashboard: every page is one of these, as JSON at its
``.json`` path and as HTML at its plain path (rendered from the same object).

The rows that pages show as the read models hold them (a run, a cycle, an operator
exchange, a regeneration attempt) are declared once, here, as dataclasses: the
projector (``read_models``) builds them and updates them in place as it folds a run's
events, the store writes them, and the pages carry them. Dataclasses, not models,
because the fold writes their attributes once per event or so, which is the rebuild's
hot path, and a dataclass's attribute write is several times cheaper than a model's;
pydantic validates, serializes and documents them as it does models
(``__pydantic_config__``), with the same JSON schema. Build them from untrusted or
stored values through a ``TypeAdapter`` (which validates), not their constructor."""

from contreact_ui.models.pages import (
    ChartCycle,
    CompareGroup,
    ComparePage,
    ComposePage,
    CycleSeries,
    CycleWindow,
    EventDetail,
    EventFilters,
    EventRowView,
    EventsPage,
    ForkLink,
    ForkOrigin,
    Health,
    MemoryEntry,
    MemoryPage,
    PaperTable2,
    PromptMessage,
    QueryRow,
    ReplayPage,
    RunPage,
    SettingChange,
    Table1Row,
    TypeCount,
)
from contreact_ui.models.rows import (
    ROW_CONFIG,
    AnalysisStatus,
    CycleView,
    ExchangeAnalysis,
    FilterOptions,
    Link,
    OperatorExchange,
    RegenerationAttempt,
    RunFilters,
    RunRow,
    RunSort,
    RunsPage,
    SimilarityMatrix,
    _Model,
    analysis_status,
)

__all__ = [
    "ROW_CONFIG",
    "AnalysisStatus",
    "ChartCycle",
    "CompareGroup",
    "ComparePage",
    "ComposePage",
    "CycleSeries",
    "CycleView",
    "CycleWindow",
    "EventDetail",
    "EventFilters",
    "EventRowView",
    "EventsPage",
    "ExchangeAnalysis",
    "FilterOptions",
    "ForkLink",
    "ForkOrigin",
    "Health",
    "Link",
    "MemoryEntry",
    "MemoryPage",
    "OperatorExchange",
    "PaperTable2",
    "PromptMessage",
    "QueryRow",
    "RegenerationAttempt",
    "ReplayPage",
    "RunFilters",
    "RunPage",
    "RunRow",
    "RunSort",
    "RunsPage",
    "SettingChange",
    "SimilarityMatrix",
    "Table1Row",
    "TypeCount",
    "_Model",
    "analysis_status",
]
