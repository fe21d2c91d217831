"""A run's log as OpenTelemetry spans, by the GenAI semantic conventions (issue 33).

Pure: events in, finished span records out, no I/O and no OpenTelemetry import (the
exporter in ``contreact_bus.traces`` turns the records into OTLP). Every id is derived
from the run id and the event that opens the span, so the same log always gives the
same trace: a restarted orchestrator, or a second one taking over a shard, continues
the run's trace instead of starting another one, and nothing has to carry a trace
context across the bus (see docs/how-to/traces.md).

The spans: one ``invoke_agent contreact`` per run (the root), one ``cycle N`` per
cycle, a ``chat {model}`` per LLM call and an ``execute_tool {name}`` per tool call
under their cycle, and under a memory tool's span its memory operation
(``upsert_memory``, ``search_memory``, ``delete_memory``). A span is given once it
ends, with the recorded times of the events that opened and closed it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.catalog.cycle import (
    CycleEnded,
    CycleStarted,
    LLMFailed,
    LLMRequested,
    LLMResponded,
)
from contreact_events.catalog.delivery import TaskFailed
from contreact_events.catalog.run import RunStarted
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested

Attribute = str | int | float | bool | tuple[str, ...]

AGENT_NAME = "contreact"
MEMORY_OPERATIONS = {
    "write": "upsert_memory",
    "read": "search_memory",
    "list": "search_memory",
    "pattern_search": "search_memory",
    "search_memory": "search_memory",
    "delete": "delete_memory",
}
"""The agent's memory tools and the GenAI conventions' memory operation each one is."""
RUN_ENDS = frozenset({"RunCompleted", "RunFailed", "RunStopped", "RunCancelled"})


def trace_id_of(run_id: str) -> int:
    """The run's trace id (128 bits, never zero): the same for every process."""
    return _digest(f"trace\0{run_id}", 16)


def span_id_of(run_id: str, key: str) -> int:
    """The id (64 bits, never zero) of the run's span opened by ``key``."""
    return _digest(f"span\0{run_id}\0{key}", 8)


def traceparent(run_id: str, key: str = "run") -> str:
    """The W3C ``traceparent`` of one of the run's spans (by default its root): what
    any process can compute to put its own spans into the run's trace."""
    return f"00-{trace_id_of(run_id):032x}-{span_id_of(run_id, key):016x}-01"


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big")
    return value or 1


@dataclass(frozen=True)
class SpanRecord:
    """One finished span: what the exporter needs, ids included."""

    run_id: str
    name: str
    key: str
    parent_key: str | None
    start: datetime
    end: datetime
    attributes: dict[str, Attribute]
    error: str | None = None
    client: bool = False
    """A call out of the process (``chat``): span kind CLIENT, else INTERNAL."""

    @property
    def trace_id(self) -> int:
        return trace_id_of(self.run_id)

    @property
    def span_id(self) -> int:
        return span_id_of(self.run_id, self.key)

    @property
    def parent_id(self) -> int | None:
        return None if self.parent_key is None else span_id_of(self.run_id, self.parent_key)


@dataclass
class _Open:
    start: datetime
    parent: str
    attributes: dict[str, Any]


@dataclass
class _Run:
    start: datetime | None = None
    model: str = ""
    provider: str = ""
    base: dict[str, Attribute] = field(default_factory=dict)
    opened: dict[str, _Open] = field(default_factory=dict)


class SpanBuilder:
    """Turns each run's events, in log order, into the spans they finish. ``feed``
    with ``emit=False`` only learns what is open (a log read again after a restart)."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.capture_content = capture_content
        self._runs: dict[str, _Run] = {}

    def open_runs(self) -> list[str]:
        return sorted(self._runs)

    def reset(self, events: Iterable[Event]) -> None:
        """Learn a run from its whole log (read again): what it has open, nothing given."""
        events = list(events)
        if events:
            self._runs.pop(events[0].run_id, None)
            self.feed(events, emit=False)

    def feed(self, events: Iterable[Event], *, emit: bool = True) -> list[SpanRecord]:
        out: list[SpanRecord] = []
        for event in events:
            out.extend(self._one(event))
        return out if emit else []

    def _one(self, event: Event) -> list[SpanRecord]:
        run = self._runs.setdefault(event.run_id, _Run())
        if run.start is None:
            run.start = event.ts
        if isinstance(event, RunStarted):
            self._started(run, event)
        elif isinstance(event, CycleStarted):
            run.opened[f"cycle/{event.cycle}"] = _Open(event.ts, "run", {})
        elif isinstance(event, LLMRequested):
            run.opened[event.task_id] = _Open(event.ts, f"cycle/{event.cycle}", {})
        elif isinstance(event, ToolCallRequested):
            tool = {"tool_name": event.tool_name}
            if self.capture_content:
                tool["arguments"] = json.dumps(event.arguments)
            run.opened[event.task_id] = _Open(event.ts, f"cycle/{event.cycle}", tool)
        elif isinstance(event, LLMResponded):
            return self._chat(run, event)
        elif isinstance(event, ToolCallCompleted):
            return self._tool(run, event)
        elif isinstance(event, TaskFailed):
            self._task_failed(run, event)
        elif isinstance(event, LLMFailed):
            return self._failed(run, event)
        elif isinstance(event, CycleEnded):
            return self._cycle(run, event)
        elif event.type in RUN_ENDS:
            return self._run_end(run, event)
        return []

    def _started(self, run: _Run, event: RunStarted) -> None:
        run.model = event.model
        run.provider = str(event.backend)
        run.base = {"gen_ai.conversation.id": event.run_id, "gen_ai.agent.name": AGENT_NAME}
        options = event.config.model_options.as_options()
        for name in ("seed", "temperature", "top_p"):
            if options.get(name) is not None:
                run.base[f"gen_ai.request.{name}"] = options[name]
        if self.capture_content:
            run.base["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": event.system_prompt}]
            )

    def _chat(self, run: _Run, event: LLMResponded) -> list[SpanRecord]:
        task_id = str(event.causation_id)
        opened = run.opened.pop(task_id, None)
        if opened is None:
            return []
        usage = event.usage
        attributes: dict[str, Attribute] = {
            **_chat_base(run),
            "gen_ai.response.model": event.model or run.model,
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
        }
        if usage.done_reason:
            attributes["gen_ai.response.finish_reasons"] = (usage.done_reason,)
        if "failed_sends" in opened.attributes:
            attributes["contreact.failed_sends"] = opened.attributes["failed_sends"]
        if usage.cost is not None:
            attributes["contreact.cost"] = usage.cost
            attributes["contreact.cost_source"] = str(usage.cost_source)
        if self.capture_content:
            output = _output(event.message, usage.done_reason)
            attributes["gen_ai.output.messages"] = json.dumps([output])
        name = f"chat {run.model}"
        return [_record(event, task_id, opened, name, attributes, client=True)]

    def _tool(self, run: _Run, event: ToolCallCompleted) -> list[SpanRecord]:
        task_id = event.task_id
        opened = run.opened.pop(task_id, None)
        if opened is None:
            return []
        tool = event.tool_name
        attributes: dict[str, Attribute] = {
            **run.base,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": task_id,
            "gen_ai.tool.type": "function",
        }
        if "failed_sends" in opened.attributes:
            attributes["contreact.failed_sends"] = opened.attributes["failed_sends"]
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = opened.attributes.get("arguments", "{}")
            attributes["gen_ai.tool.call.result"] = event.output
        error = None if event.ok else event.output[:500]
        if error is not None:
            attributes["error.type"] = "tool_error"
        spans = [_record(event, task_id, opened, f"execute_tool {tool}", attributes, error)]
        operation = MEMORY_OPERATIONS.get(tool)
        if operation is not None:
            memory = {**run.base, "gen_ai.operation.name": operation, "contreact.tool": tool}
            inner = _Open(opened.start, task_id, memory)
            spans.append(_record(event, f"{task_id}/memory", inner, operation, memory, error))
        return spans

    @staticmethod
    def _task_failed(run: _Run, event: TaskFailed) -> None:
        """A send of the task failed; the run sends it again (``TaskRetried``) or ends:
        the span stays open, counting the failed sends."""
        opened = run.opened.get(event.task_id)
        if opened is not None:
            opened.attributes["failed_sends"] = opened.attributes.get("failed_sends", 0) + 1

    def _failed(self, run: _Run, event: LLMFailed) -> list[SpanRecord]:
        task_id = str(event.causation_id)
        opened = run.opened.pop(task_id, None)
        if opened is None:
            return []
        return [self._unfinished(run, event, task_id, opened, event.error)]

    def _unfinished(
        self, run: _Run, event: Event, key: str, opened: _Open, reason: str
    ) -> SpanRecord:
        """A span closed by a failure (or by the run ending first), with error status."""
        tool = opened.attributes.get("tool_name")
        chat = tool is None and not key.startswith("cycle/")
        base = _chat_base(run) if chat else run.base
        attributes: dict[str, Attribute] = {**base, "error.type": event.type}
        if key.startswith("cycle/"):
            name = f"cycle {key.removeprefix('cycle/')}"
        else:
            name = f"chat {run.model}" if chat else f"execute_tool {tool}"
        return _record(event, key, opened, name, attributes, reason[:500], client=chat)

    def _cycle(self, run: _Run, event: CycleEnded) -> list[SpanRecord]:
        key = f"cycle/{event.cycle}"
        opened = run.opened.pop(key, None)
        if opened is None:
            return []
        attributes: dict[str, Attribute] = {
            **run.base,
            "contreact.cycle": event.cycle,
            "contreact.cycle.ended_by": event.ended_by,
            **{f"contreact.cycle.{k}": v for k, v in event.metrics.model_dump().items()},
        }
        return [_record(event, key, opened, f"cycle {event.cycle}", attributes)]

    def _run_end(self, run: _Run, event: Event) -> list[SpanRecord]:
        del self._runs[event.run_id]
        ended = f"the run ended first ({event.type})"
        spans = [self._unfinished(run, event, k, o, ended) for k, o in run.opened.items()]
        assert run.start is not None  # set by the run's first event
        attributes: dict[str, Attribute] = {
            **run.base,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.request.model": run.model,
            "gen_ai.provider.name": run.provider,
            "contreact.run.status": event.type,
        }
        error = None
        if event.type != "RunCompleted":
            error = str(getattr(event, "reason", None) or getattr(event, "detail", event.type))
        root = _Open(run.start, "", attributes)
        name = f"invoke_agent {AGENT_NAME}"
        return [*spans, _record(event, "run", root, name, attributes, error and error[:500])]


def _chat_base(run: _Run) -> dict[str, Attribute]:
    return {
        **run.base,
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": run.provider,
        "gen_ai.request.model": run.model,
    }


def _output(message: AssistantMessage, finish: str | None) -> dict[str, Any]:
    """The reply in the conventions' output message shape."""
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        parts.append({"type": "tool_call", "name": call.name, "arguments": call.arguments})
    return {"role": "assistant", "parts": parts, "finish_reason": finish or ""}


def _record(
    event: Event,
    key: str,
    opened: _Open,
    name: str,
    attributes: dict[str, Attribute],
    error: str | None = None,
    *,
    client: bool = False,
) -> SpanRecord:
    return SpanRecord(
        run_id=event.run_id,
        name=name,
        key=key,
        parent_key=opened.parent or None,
        start=opened.start,
        end=event.ts,
        attributes=attributes,
        error=error,
        client=client,
    )
