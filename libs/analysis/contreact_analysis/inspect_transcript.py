"""One run's Inspect transcript: its messages in Inspect's types, and its events (model
and tool calls, cycle spans, info, anchors and branches) built while its log is folded.
``inspect_log`` puts them into samples and logs. Imports inspect_ai only when called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.config.run_places import RunPlace
from contreact_events.core.fold import fold
from contreact_events.core.prompt import offered_tools_now, prompt_messages
from contreact_events.core.state import AgentState


def inspect_messages(messages: Sequence[ChatMessage], model: str) -> list[Any]:
    """The conversation as Inspect's messages: each assistant tool call gets an id from
    its place (``call_{message}_{n}``, as the OpenAI backend sends them) and each tool
    result names the call it answers (results follow their calls in order)."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    out: list[Any] = []
    waiting: list[str] = []
    for index, message in enumerate(messages):
        match message.role:
            case "system":
                out.append(ChatMessageSystem(content=message.content))
            case "user":
                out.append(ChatMessageUser(content=message.content))
            case "tool":
                answered = waiting.pop(0) if waiting else f"call_{index}_0"
                out.append(
                    ChatMessageTool(
                        content=message.content, tool_call_id=answered, function=message.tool_name
                    )
                )
            case _:
                calls = [
                    ToolCall(id=f"call_{index}_{n}", function=c.name, arguments=dict(c.arguments))
                    for n, c in enumerate(message.tool_calls)
                ]
                waiting = [call.id for call in calls]
                out.append(
                    ChatMessageAssistant(
                        content=message.content, tool_calls=calls or None, model=model
                    )
                )
    return out


class Transcript:
    """Folds one run's log and builds its Inspect events as it goes."""

    def __init__(self, place: RunPlace) -> None:
        from inspect_ai.model import ModelUsage

        self.place = place
        self.state = AgentState(run_id=place.run_id)
        self.events: list[Any] = []
        self.input: list[Any] = []
        self.usage = ModelUsage()
        self._request: tuple[Any, list[Any], list[Any]] | None = None
        self._tools: dict[str, Any] = {}
        self._span: str | None = None

    def history(self, state: AgentState) -> tuple[ChatMessage, ...]:
        return (ChatMessage(role="system", content=state.system_prompt), *state.message_history)

    def add(self, event: Event) -> None:
        before = self.state
        self.state = fold(self.state, event)
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event, before)

    def _stamp(self, item: Any, event: Event) -> Any:
        item.timestamp = event.ts
        item.span_id = self._span
        item.working_start = 0.0
        self.events.append(item)
        return item

    def _on_CycleStarted(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.event import SpanBeginEvent

        self._span = f"{self.place.run_id}/cycle-{event.cycle}"
        span = SpanBeginEvent(id=self._span, name=f"cycle {event.cycle}", type="cycle")
        self._stamp(span, event)
        if event.advisory:
            self._info(event, "advisory", {"cycle": event.cycle, "advisory": event.advisory})
        if not self.input:
            messages = prompt_messages(self.state)
            self.input = inspect_messages(messages, "")

    def _on_CycleEnded(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.event import AnchorEvent, SpanEndEvent

        if self._span is not None:
            self._stamp(SpanEndEvent(id=self._span), event)
        self._span = None
        anchor = AnchorEvent(anchor_id=f"{self.place.run_id}/c{event.cycle}", source="CycleEnded")
        self._stamp(anchor, event)

    def _on_RunForked(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.event import BranchEvent

        branch = BranchEvent(from_anchor=f"{event.parent_run_id}/c{event.at_cycle}")
        self._stamp(branch, event)

    def _on_LLMRequested(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.tool import ToolInfo, ToolParams

        state = self.state
        messages = prompt_messages(state)
        model = state.resolved_model or state.model_name
        tools = [
            ToolInfo(
                name=spec["function"]["name"],
                description=spec["function"].get("description", ""),
                parameters=ToolParams.model_validate(spec["function"].get("parameters", {})),
            )
            for spec in offered_tools_now(state)
            if isinstance(spec.get("function"), dict)
        ]
        self._request = (event, inspect_messages(messages, model), tools)

    def _on_LLMResponded(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.event import ModelEvent
        from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage

        if self._request is None:
            return
        requested, messages, tools = self._request
        self._request = None
        model = event.model or self.state.resolved_model or self.state.model_name
        usage = ModelUsage(
            input_tokens=event.usage.prompt_tokens,
            output_tokens=event.usage.completion_tokens,
            total_tokens=event.usage.prompt_tokens + event.usage.completion_tokens,
            total_cost=event.usage.cost,
        )
        self.usage = self.usage + usage
        reply = inspect_messages(self.history(self.state), model)[-1]
        output = ModelOutput.from_content(
            model, event.message.content, stop_reason="tool_calls" if reply.tool_calls else "stop"
        )
        output.choices[0].message = reply
        output.usage = usage
        output.time = event.usage.wall_s
        call = ModelEvent(
            model=model,
            input=messages,
            tools=tools,
            tool_choice="auto" if tools else "none",
            config=GenerateConfig(),
            output=output,
            completed=event.ts,
            working_time=event.usage.wall_s,
            metadata={"task_id": requested.task_id, "cost_source": event.usage.cost_source},
        )
        self._stamp(call, requested)
        call.completed = event.ts

    def _on_ToolCallRequested(self, event: Any, _before: AgentState) -> None:
        self._tools[event.task_id] = event

    def _on_ToolCallCompleted(self, event: Any, _before: AgentState) -> None:
        from inspect_ai.event import ToolEvent
        from inspect_ai.tool import ToolCallError

        requested = self._tools.pop(event.task_id, None)
        if requested is None:
            return
        tool = ToolEvent(
            id=requested.task_id,
            function=requested.tool_name,
            arguments=dict(requested.arguments),
            result=event.output,
            error=None if event.ok else ToolCallError("unknown", event.output),
            completed=event.ts,
            working_time=(event.ts - requested.ts).total_seconds(),
        )
        self._stamp(tool, requested)

    def _on_OperatorMessageSent(self, event: Any, _before: AgentState) -> None:
        self._info(event, "operator", {"cycle": event.cycle, "agent": event.message})

    def _on_OperatorReplied(self, event: Any, _before: AgentState) -> None:
        self._info(event, "operator", {"reply": event.text, "by": event.by})

    def _on_SimilarityAssessed(self, event: Any, _before: AgentState) -> None:
        if event.advisory:
            data = {
                "cycle": event.cycle,
                "level": event.level,
                "max_similarity": event.max_similarity,
                "advisory for the next cycle": event.advisory,
            }
            self._info(event, "advisory", data)

    def _on_RunStopped(self, event: Any, _before: AgentState) -> None:
        self._info(event, "budget", {"stopped": f"{event.reason}: {event.detail}"})

    def _info(self, event: Event, source: str, data: dict[str, Any]) -> None:
        from inspect_ai.event import InfoEvent

        self._stamp(InfoEvent(source=source, data=data), event)
