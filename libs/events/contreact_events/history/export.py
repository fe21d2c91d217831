"""Export a run in seed 003's JSONL LogRecord format. Pure.

Records: CYCLE_START, LLM_INVOCATION (prompt_messages, response_message,
model_options, and the backend, model and host that actually answered), TOOL_CALL
(tool_name, parameters, output), CYCLE_END (final_reflection, metrics); and
SETTINGS_CHANGED (changes with old and new values, by, reason) where a researcher
changed a setting mid-run (``contreact set``). The run
log stores deltas; the full prompt of every LLM call is rebuilt here by folding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from contreact_events.catalog import Event
from contreact_events.core.fold import fold
from contreact_events.core.prompt import prompt_messages
from contreact_events.core.state import AgentState


def export_records(events: Sequence[Event]) -> Iterator[dict[str, Any]]:
    if not events:
        return
    state = AgentState(run_id=events[0].run_id)
    prompt: list[dict[str, Any]] = []
    for event in events:
        before = state
        state = fold(state, event)
        record = _record(event, before, state, prompt)
        if event.type == "LLMRequested":
            prompt = [m.as_ollama() for m in prompt_messages(state)]
        if record is not None:
            event_type, payload = record
            yield {
                "timestamp": event.ts.isoformat(),
                "run_id": event.run_id,
                "cycle_number": state.cycle_number,
                "event_type": event_type,
                "payload": payload,
            }


def _record(
    event: Event, before: AgentState, after: AgentState, prompt: list[dict[str, Any]]
) -> tuple[str, dict[str, Any]] | None:
    options = after.config.model_options.as_options() if after.config else {}
    match event.type:
        case "CycleStarted":
            if before.researcher_question:  # ``contreact ask``: a researcher's turn opens it
                return "CYCLE_START", {
                    "advisory": event.advisory,
                    "researcher_question": before.researcher_question,
                }
            return "CYCLE_START", {"advisory": event.advisory}
        case "SettingsChanged":  # ``contreact set``: by whom, why, old and new values
            return "SETTINGS_CHANGED", {
                "changes": {k: {"old": old, "new": new} for k, (old, new) in event.changes.items()},
                "by": event.by,
                "reason": event.reason,
            }
        case "LLMResponded":
            message = event.message
            response: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                response["tool_calls"] = [
                    {"function": {"name": c.name, "arguments": c.arguments}}
                    for c in message.tool_calls
                ]
            return "LLM_INVOCATION", {
                "prompt_messages": prompt,
                "response_message": response,
                "model_options": options,
                "backend": after.backend,
                "model": event.model,
                "host": event.host,
                "usage": event.usage.model_dump(mode="json"),
                "tool_call_error": event.tool_call_error,
            }
        case "LLMFailed":
            return "LLM_INVOCATION", {
                "prompt_messages": prompt,
                "response_message": None,
                "model_options": options,
                "backend": after.backend,
                "model": after.resolved_model or after.model_name,
                "error": event.error,
            }
        case "ToolCallCompleted":
            head = before.tool_queue[0]
            return "TOOL_CALL", {
                "tool_name": event.tool_name,
                "parameters": head.arguments,
                "output": event.output,
                "ok": event.ok,
            }
        case "CycleEnded":
            return "CYCLE_END", {
                "final_reflection": after.reflection_history[-1],
                "ended_by": event.ended_by,
                "metrics": event.metrics.model_dump(mode="json"),
                "diversity_advisory": after.next_advisory,
            }
    return None
