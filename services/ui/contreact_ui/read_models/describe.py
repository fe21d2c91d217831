"""One line per event for the log viewer (made when a page shows the event, not
stored)."""

from __future__ import annotations

import orjson

from contreact_events.catalog import Event
from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.catalog.control import SettingsChanged
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ReflectionRecorded,
)
from contreact_events.catalog.diversity import (
    ParagraphsChecked,
    ReflectionEmbedded,
    RegenerationRequested,
    SimilarityAssessed,
)
from contreact_events.catalog.fork import RunForked
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

SUMMARY_CHARS = 200


def describe(event: Event) -> str:
    """One line for the event log (agent text included: the page escapes it). Made
    when a page shows the event, not stored."""
    match event:
        case RunRequested() | RunStarted():
            text = f"{event.config.model_name}, {event.config.cycle_count} cycles"
        case ModelChecked():
            text = f"{'ok' if event.ok else 'FAILED'} {event.backend or ''} {event.detail}"
        case CycleStarted():
            text = f"cycle {event.cycle}" + (" with an advisory" if event.advisory else "")
        case LLMRequested():
            text = f"cycle {event.cycle} step {event.step} (call {event.call_index + 1})"
        case LLMResponded():
            calls = ", ".join(c.name for c in event.message.tool_calls)
            text = (
                (f"calls {calls}" if calls else "answer")
                + (f" from {event.host}" if event.host else "")
                + (f": {event.message.content}" if event.message.content else "")
            )
        case LLMFailed():
            text = event.error
        case ToolCallRequested():
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            text = f"{event.tool_name}({args})"
        case ToolCallCompleted():
            text = f"{event.tool_name} {'ok' if event.ok else 'error'}: {event.output}"
        case OperatorMessageSent():
            text = event.message
        case OperatorReplied():
            text = f"{event.by}: {event.text}"
        case ReflectionRecorded():
            text = event.text
        case CycleEnded():
            text = f"cycle {event.cycle} ended by {event.ended_by}"
        case SimilarityAssessed():
            sim = "-" if event.max_similarity is None else f"{event.max_similarity:.3f}"
            text = f"level {event.level}, max {sim} (cycle {event.most_similar_cycle or '-'})"
        case RunCompleted():
            text = f"{event.cycles} cycles"
        case RunFailed() | RunCancelled():
            text = event.reason
        case RunStopped():
            text = f"stopped: {event.reason}: {event.detail}"
        case ParagraphsChecked():
            text = (
                f"attempt {event.attempt}: {len(event.paragraphs)} paragraph(s), "
                f"similarity {event.overall_similarity:.3f}, "
                f"{'unique' if event.is_unique else 'repeats'}"
            )
        case RegenerationRequested():
            text = f"attempt {event.attempt} asked for"
        case ReflectionEmbedded():
            text = f"cycle {event.cycle}, {len(event.vector)}-d ({event.model})"
        case RunForked():
            changed = ", ".join(event.changes) or "nothing but the run id"
            text = f"forked from {event.parent_run_id} after cycle {event.at_cycle}; {changed}"
            if event.question:
                text += f"; researcher's question: {event.question}"
        case HistoryCompactionRequested():
            text = (
                f"history compacted before cycle {event.cycle}: messages 1-{event.upto} of "
                f"{event.messages} to be summarised by {event.model}"
            )
        case SettingsChanged():
            changed = ", ".join(
                f"{k} {old!r} -> {new!r}" for k, (old, new) in event.changes.items()
            )
            text = f"{changed} by {event.by}: {event.reason}"
        case _:
            data = event.model_dump(
                mode="json",
                exclude={"event_id", "run_id", "type", "schema_version", "ts", "correlation_id"},
            )
            text = orjson.dumps(data).decode()
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
