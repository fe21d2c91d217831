"""The catalog: one discriminated union of every run-log event, its schema versions,
and the upcasters that bring older stored shapes up to the current ones.

Assessment events (``catalog/assessment.py``) are exported here too, but they are not
part of ``Event``: they live in a per-run stream of their own, never in the run log."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeAlias, get_args

from pydantic import Field, TypeAdapter

from contreact_events.catalog.assessment import ASSESSMENT_ADAPTER as ASSESSMENT_ADAPTER
from contreact_events.catalog.assessment import ASSESSMENT_EVENT_CLASSES as ASSESSMENT_EVENT_CLASSES
from contreact_events.catalog.assessment import (
    ASSESSMENT_SCHEMA_VERSIONS as ASSESSMENT_SCHEMA_VERSIONS,
)
from contreact_events.catalog.assessment import ASSESSMENT_UPCASTERS as ASSESSMENT_UPCASTERS
from contreact_events.catalog.assessment import AnswerStatus as AnswerStatus
from contreact_events.catalog.assessment import AssessmentBase as AssessmentBase
from contreact_events.catalog.assessment import AssessmentEvent as AssessmentEvent
from contreact_events.catalog.assessment import AssessmentFailed as AssessmentFailed
from contreact_events.catalog.assessment import AssessmentRead as AssessmentRead
from contreact_events.catalog.assessment import RunAssessed as RunAssessed
from contreact_events.catalog.cognition import (
    MemoriesRetrievalRequested,
    MemoriesRetrieved,
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
    PersistentMemoryRequested,
    PersistentMemoryStored,
)
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.catalog.control import RunPaused, RunResumed, SettingsChanged
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ReflectionRecorded,
    StepLimitReached,
)
from contreact_events.catalog.delivery import TaskFailed, TaskRetried
from contreact_events.catalog.diversity import (
    TORCH_RUNTIME,
    EmbeddingFailed,
    EmbeddingRequested,
    ParagraphCheckRequested,
    ParagraphsAccepted,
    ParagraphsChecked,
    ReflectionEmbedded,
    RegenerationRequested,
    SimilarityAssessed,
    TopicExhausted,
)
from contreact_events.catalog.envelope import EventBase
from contreact_events.catalog.fork import MemorySeeded, RunForked
from contreact_events.catalog.run import (
    ModelChecked,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunRequested,
    RunStarted,
    RunStopped,
)
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)
from contreact_events.exceptions import NewerSchemaVersion, UnknownEventType

Event: TypeAlias = Annotated[
    RunRequested
    | ModelChecked
    | RunStarted
    | RunCompleted
    | RunFailed
    | RunCancelled
    | RunStopped
    | CycleStarted
    | LLMRequested
    | LLMResponded
    | LLMFailed
    | StepLimitReached
    | ReflectionRecorded
    | CycleEnded
    | ToolCallRequested
    | ToolCallCompleted
    | OperatorMessageSent
    | OperatorReplied
    | EmbeddingRequested
    | ReflectionEmbedded
    | EmbeddingFailed
    | SimilarityAssessed
    | ParagraphCheckRequested
    | ParagraphsChecked
    | RegenerationRequested
    | ParagraphsAccepted
    | TopicExhausted
    | TaskFailed
    | TaskRetried
    | RunForked
    | MemorySeeded
    | OperatorMessageAnalysisRequested
    | OperatorMessageAnalyzed
    | PersistentMemoryRequested
    | PersistentMemoryStored
    | MemoriesRetrievalRequested
    | MemoriesRetrieved
    | SettingsChanged
    | RunPaused
    | RunResumed
    | HistoryCompactionRequested,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

EVENT_CLASSES: dict[str, type[EventBase]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])
}
"""Every event class by its ``type`` tag, derived from the union (written out once, above)."""

TERMINAL_TYPES = frozenset({"RunCompleted", "RunFailed", "RunCancelled", "RunStopped"})

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _config_without_diversity(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 configs predate the diversity check: those runs ran without it."""
    config = dict(data.get("config") or {})
    config["diversity"] = {**dict(config.get("diversity") or {}), "enabled": False}
    return {**data, "config": config}


def _unchanged(data: dict[str, Any]) -> dict[str, Any]:
    """A version that only widened what a field may hold: old data is valid as is."""
    return data


def _config_without_caps(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 configs predate the size caps and the final call at the step cap:
    those runs ran with neither."""
    config = dict(data.get("config") or {})
    config["limits"] = {
        "memory_value_chars": None,
        "tool_argument_chars": None,
        "tool_output_chars": None,
        "llm_content_chars": None,
    }
    config["final_call_at_step_cap"] = False
    diversity = dict(config.get("diversity") or {})
    config["diversity"] = {**diversity, "feedback_placement": "after_newest"}
    return {**data, "config": config}


def _config_with_whole_arguments(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 configs predate cutting over-cap tool-call arguments in the history:
    those runs sent them back whole."""
    config = dict(data.get("config") or {})
    limits = dict(config.get("limits") or {})
    config["limits"] = {**limits, "cut_arguments_in_history": False}
    return {**data, "config": config}


def _config_with_rules_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 configs (a version 1 fork's) predate the heuristic's rules 2: those runs'
    heuristic analyses read a bare acknowledgement as a statement."""
    config = dict(data.get("config") or {})
    cognition = dict(config.get("cognition") or {})
    config["cognition"] = {**cognition, "heuristic_rules": 1}
    return {**data, "config": config}


def _analysis_usage_unknown(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 analyses recorded no usage. A worker's answer (its causation is its
    task) may have been a model's call: it reads as one of unknown cost (``cost`` None,
    never zero; its tokens were not recorded). The core's own analyses made no call."""
    worker = data.get("causation_id") == data.get("task_id")
    return {"usage": {} if worker else None, **data}


def _adds(**defaults: Any) -> Upcaster:
    """An upcaster for a version that only added fields: the old events read with
    the value that describes how they ran."""

    def step(data: dict[str, Any]) -> dict[str, Any]:
        return {**defaults, **data}

    return step


UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("RunRequested", 1): _config_without_diversity,
    ("RunStarted", 1): _config_without_diversity,
    ("OperatorReplied", 1): _unchanged,
    ("RunRequested", 2): _config_without_caps,
    ("RunStarted", 2): lambda data: _adds(prompt_hashes={})(_config_without_caps(data)),
    ("RunRequested", 3): _config_with_whole_arguments,
    ("RunStarted", 3): _config_with_whole_arguments,
    ("RunRequested", 4): _config_with_rules_1,
    ("RunStarted", 4): _config_with_rules_1,
    ("RunForked", 1): lambda data: _adds(config_in_force=False)(_config_with_rules_1(data)),
    ("RunForked", 2): _adds(question=""),
    ("LLMRequested", 1): _adds(prompt_sha256=None),
    ("LLMResponded", 1): _unchanged,
    ("LLMResponded", 2): _adds(host=None),
    ("StepLimitReached", 1): _adds(final_call=False),
    ("RegenerationRequested", 1): _adds(pinned=False),
    ("ReflectionEmbedded", 1): _adds(runtime=TORCH_RUNTIME),
    ("ParagraphsChecked", 1): _adds(runtime=TORCH_RUNTIME),
    ("OperatorMessageAnalyzed", 1): _analysis_usage_unknown,
}
"""(event type, stored version) -> function returning the data at version + 1.
Register one here whenever an event's ``schema_version`` literal is raised."""


SCHEMA_VERSIONS: dict[str, int] = {
    name: int(cls.model_fields["schema_version"].default) for name, cls in EVENT_CLASSES.items()
}
"""The current shape version of every event type."""


def current_version(event_type: str, versions: Mapping[str, int] = SCHEMA_VERSIONS) -> int:
    if event_type not in versions:
        known = ", ".join(sorted(versions))
        raise UnknownEventType(f"unknown event type {event_type!r} (known: {known})")
    return versions[event_type]


def upcast(
    data: dict[str, Any],
    upcasters: Mapping[tuple[str, int], Upcaster] = UPCASTERS,
    versions: Mapping[str, int] = SCHEMA_VERSIONS,
) -> dict[str, Any]:
    """Bring a stored event's data to the current version of its type.

    A version newer than this code knows is refused: reading it would drop fields.
    """
    event_type = str(data.get("type"))
    target = current_version(event_type, versions)
    version = int(data.get("schema_version", 1))
    if version > target:
        raise NewerSchemaVersion(
            f"event {data.get('event_id')!r} of type {event_type} has schema version "
            f"{version}, but this code reads up to version {target}: upgrade contreact"
        )
    while version < target:
        step = upcasters.get((event_type, version))
        if step is None:
            raise UnknownEventType(
                f"no upcaster for {event_type} version {version} -> {version + 1}"
            )
        data = step(dict(data))
        version += 1
        data["schema_version"] = version
    return data
