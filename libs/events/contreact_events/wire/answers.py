"""The inbox messages that answer a task or carry an input (worker results, CLI
commands): one constructor each, every one made by ``input_message``, which validates
the data against the input event's class where the message is made. The orchestrator
turns them into input events (``InboxMessage.to_event``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.catalog.cognition import (
    MemoriesRetrieved,
    OperatorMessageAnalyzed,
    PersistentMemoryStored,
    RetrievedMemory,
)
from contreact_events.catalog.control import RunPaused, RunResumed, SettingsChanged
from contreact_events.catalog.cycle import LLMFailed, LLMResponded
from contreact_events.catalog.delivery import TaskFailed
from contreact_events.catalog.diversity import (
    TORCH_RUNTIME,
    ChunkMatch,
    EmbeddingFailed,
    ParagraphsChecked,
    ReflectionEmbedded,
)
from contreact_events.catalog.envelope import EventBase, InputEvent
from contreact_events.catalog.exchange import Analysis
from contreact_events.catalog.fork import MemorySeeded
from contreact_events.catalog.run import ModelChecked, RunCancelled, RunRequested
from contreact_events.catalog.tool import OperatorReplied, ToolCallCompleted
from contreact_events.config import RunConfig
from contreact_events.wire.tasks import EmbedTask, InboxMessage, LLMTask, MemoryTask

_ENVELOPE_FIELDS: set[str] = {*EventBase.model_fields, "type"}
_UNSTAMPED = datetime.fromtimestamp(0, UTC)


def input_message(
    kind: type[InputEvent], run_id: str, causation_id: str | None, **data: Any
) -> InboxMessage:
    """An inbox message carrying ``kind``'s data, validated against the event class where
    it is made: a worker (or the CLI) that builds a malformed input fails at once, in its
    own process, instead of the orchestrator refusing the message later. The orchestrator validates
    again on receipt (``InboxMessage.to_event``), since the bus is not trusted; the
    envelope (id, receipt time) is stamped there."""
    event = kind.model_validate(
        {
            **data,
            "event_id": "unstamped",
            "run_id": run_id,
            "ts": _UNSTAMPED,
            "causation_id": causation_id,
            "correlation_id": run_id,
        }
    )
    return InboxMessage(
        run_id=run_id,
        kind=event.type,  # type: ignore[attr-defined]
        causation_id=causation_id,
        data=event.model_dump(mode="json", exclude=_ENVELOPE_FIELDS),
    )


def answering(
    kind: type[InputEvent], task: LLMTask | MemoryTask | EmbedTask, **data: Any
) -> InboxMessage:
    """``input_message`` for the answer to ``task``: of its run, caused by it, naming it
    (``task_id``)."""
    return input_message(kind, task.run_id, task.task_id, task_id=task.task_id, **data)


def run_requested(
    config: RunConfig, requested_by: str = "cli", *, stepping: bool = False
) -> InboxMessage:
    """``contreact run`` (``stepping``: ``--step``, the run rests before its first call)."""
    return input_message(
        RunRequested,
        config.run_id,
        None,
        config=config,
        requested_by=requested_by,
        stepping=stepping,
    )


def run_cancelled(run_id: str, reason: str) -> InboxMessage:
    return input_message(RunCancelled, run_id, None, reason=reason)


def settings_changed(
    run_id: str, changes: dict[str, tuple[Any, Any]], *, by: str, reason: str, cycle: int
) -> InboxMessage:
    """``contreact set``: the run's settings changed mid-run, by whom and why."""
    return input_message(
        SettingsChanged, run_id, None, changes=changes, by=by, reason=reason, cycle=cycle
    )


def run_paused(run_id: str, *, by: str, reason: str = "", stepping: bool = False) -> InboxMessage:
    """``contreact pause`` (``stepping``: ``contreact run --step``, ``pause --step``)."""
    return input_message(RunPaused, run_id, None, by=by, reason=reason, stepping=stepping)


def run_resumed(run_id: str, *, by: str, step: bool = False) -> InboxMessage:
    """``contreact resume``; ``step``: ``contreact step`` (one model call more)."""
    return input_message(RunResumed, run_id, None, by=by, step=step)


def operator_replied(
    run_id: str, task_id: str, text: str, by: Literal["operator", "policy", "timeout"]
) -> InboxMessage:
    return input_message(OperatorReplied, run_id, task_id, task_id=task_id, text=text, by=by)


def llm_responded(
    task: LLMTask,
    message: AssistantMessage,
    usage: LLMUsage,
    model: str,
    tool_call_error: str | None = None,
) -> InboxMessage:
    return input_message(
        LLMResponded,
        task.run_id,
        task.task_id,
        message=message,
        usage=usage,
        model=model,
        tool_call_error=tool_call_error,
        host=task.host or None,
    )


def operator_message_analyzed(
    task: LLMTask,
    analysis: Analysis,
    fallback_reason: str | None,
    usage: LLMUsage | None = None,
) -> InboxMessage:
    """The answer to an analysis task; ``usage``: the call's, when a model answered."""
    return answering(
        OperatorMessageAnalyzed,
        task,
        analysis=analysis.model_dump(),
        fallback_reason=fallback_reason,
        usage=usage,
    )


def llm_failed(task: LLMTask, error: str, *, retryable: bool, attempts: int) -> InboxMessage:
    return input_message(
        LLMFailed, task.run_id, task.task_id, error=error, retryable=retryable, attempts=attempts
    )


def model_checked(
    task: LLMTask,
    *,
    ok: bool,
    backend: str | None,
    detail: str,
    model_digest: str | None = None,
    model: str | None = None,
) -> InboxMessage:
    return input_message(
        ModelChecked,
        task.run_id,
        task.task_id,
        ok=ok,
        backend=backend,
        model=model or task.model,
        model_digest=model_digest,
        detail=detail,
    )


def task_failed(
    run_id: str, task_id: str, cause: str, reason: str, *, send: int | None = None
) -> InboxMessage:
    """A task of ``run_id`` will not be answered: it expired, was dead-lettered, or its
    result was refused. The run retries it within its budget, then fails."""
    return input_message(
        TaskFailed, run_id, task_id, task_id=task_id, cause=cause, reason=reason, send=send
    )


def memory_seeded(task: MemoryTask, calls: int, *, ok: bool, detail: str = "") -> InboxMessage:
    return answering(MemorySeeded, task, calls=calls, ok=ok, detail=detail)


def tool_completed(task: MemoryTask, output: str, *, ok: bool) -> InboxMessage:
    return tool_result(task.run_id, task.task_id, task.tool, output, ok=ok)


def tool_result(run_id: str, task_id: str, tool: str, output: str, *, ok: bool) -> InboxMessage:
    return input_message(
        ToolCallCompleted, run_id, task_id, task_id=task_id, tool_name=tool, output=output, ok=ok
    )


def reflection_embedded(
    task: EmbedTask,
    vector: Sequence[float],
    model: str,
    *,
    truncated: bool,
    runtime: str = TORCH_RUNTIME,
) -> InboxMessage:
    return answering(
        ReflectionEmbedded,
        task,
        cycle=task.cycle,
        vector=[float(x) for x in vector],
        model=model,
        truncated=truncated,
        runtime=runtime,
    )


def embedding_failed(task: EmbedTask, error: str) -> InboxMessage:
    return answering(EmbeddingFailed, task, cycle=task.cycle, error=error)


def paragraphs_checked(
    task: EmbedTask,
    *,
    paragraphs: Sequence[str],
    vectors: Sequence[Sequence[float]],
    overall_similarity: float,
    is_unique: bool,
    matches: Sequence[ChunkMatch],
    feedback: str,
    corpus_chunks: int,
    windows: bool,
    runtime: str = TORCH_RUNTIME,
) -> InboxMessage:
    return answering(
        ParagraphsChecked,
        task,
        cycle=task.cycle,
        attempt=task.attempt,
        paragraphs=list(paragraphs),
        vectors=[[float(x) for x in v] for v in vectors],
        overall_similarity=float(overall_similarity),
        is_unique=is_unique,
        matches=list(matches),
        feedback=feedback,
        corpus_chunks=corpus_chunks,
        windows=windows,
        runtime=runtime,
    )


def memories_retrieved(
    task: EmbedTask, memories: Sequence[RetrievedMemory], *, error: str | None = None
) -> InboxMessage:
    """The answer to a cycle's memory retrieval (``cognition.memory_block``)."""
    return answering(
        MemoriesRetrieved,
        task,
        cycle=task.cycle,
        memories=[m.model_dump(mode="json") for m in memories],
        error=error,
    )


def kept_stored(task: MemoryTask, output: str, *, ok: bool) -> InboxMessage:
    """The answer to the memory policy's task."""
    key = str(task.arguments.get("key", ""))
    return answering(PersistentMemoryStored, task, key=key, output=output, ok=ok)
