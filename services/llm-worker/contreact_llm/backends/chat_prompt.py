"""The ChatML prompt for a model without a chat template (the embedded Gemma), in the
layout of llama-cpp-python's ``chatml-function-calling`` format: tools listed in the
system turn, answers starting ``message:`` or ``functions.NAME:`` + JSON arguments.

Pure: no model here. Tool results (which that format has no turn for) become user
turns naming the tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from contreact_events.catalog.chat import ChatMessage, ToolCall

END = "<|im_end|>"
STOPS = (END, "<|im_start|>")
MESSAGE_PREFIX = "message:"
CALL_PREFIX = "functions."


def _tools_block(tools: Sequence[dict[str, Any]]) -> str:
    lines = ["", "", "You have access to the following functions:"]
    for tool in tools:
        function = tool.get("function", {})
        lines += ["", f"functions.{function.get('name')}:", json.dumps(function.get("parameters"))]
    lines += [
        "",
        "You can respond with either a single message or one function call.",
        "To respond with a message begin with 'message:', then the message on the next line.",
        "To call a function begin with 'functions.<function_name>:', then its arguments "
        'as a JSON object on the next line, e.g. {"key": "value"}',
    ]
    return "\n".join(lines)


def uses_call_layout(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> bool:
    """Assistant turns as ``message:`` / ``functions.NAME:``: with tools offered, and
    without (the final call at the step cap) when the history has tool calls, which
    the plain layout would show as empty turns (the model then answers empty too)."""
    return bool(tools) or any(m.role == "assistant" and m.tool_calls for m in messages)


def _turn(message: ChatMessage, call_layout: bool) -> str:
    if message.role == "tool":
        tool = message.tool_name or "tool"
        return f"<|im_start|>user\n[result of {tool}]\n{message.content}{END}\n"
    if message.role != "assistant" or not call_layout:
        return f"<|im_start|>{message.role}\n{message.content}{END}\n"
    parts = [f"message:\n{message.content}"] if message.content else []
    parts += [f"functions.{c.name}:\n{json.dumps(c.arguments)}" for c in message.tool_calls]
    return f"<|im_start|>assistant\n{chr(10).join(parts)}{END}\n"


def render(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> str:
    """The whole prompt, ending with the opened assistant turn."""
    out = []
    call_layout = uses_call_layout(messages, tools)
    has_system = bool(messages) and messages[0].role == "system"
    if tools and not has_system:
        out.append(f"<|im_start|>system\n{_tools_block(tools).lstrip()}{END}\n")
    for index, message in enumerate(messages):
        if index == 0 and has_system and tools:
            out.append(f"<|im_start|>system\n{message.content}{_tools_block(tools)}{END}\n")
        else:
            out.append(_turn(message, call_layout))
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def fit(
    messages: Sequence[ChatMessage],
    fits: Callable[[Sequence[ChatMessage]], bool],
) -> tuple[tuple[ChatMessage, ...], int]:
    """Drop the oldest non-system messages until ``fits``; keep the system messages
    and at least the last message. Returns the kept messages and how many were dropped."""
    kept = list(messages)
    dropped = 0
    while not fits(kept):
        history = [i for i, m in enumerate(kept[:-1]) if m.role != "system"]
        if not history:
            break
        del kept[history[0]]
        dropped += 1
    return tuple(kept), dropped


def parse_arguments(name: str, text: str) -> ToolCall:
    """A tool call from generated argument text; unreadable arguments never raise."""
    shown = repr(text) if len(text) <= 200 else f"{text[:200]!r}... ({len(text)} characters)"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        problem = f"arguments are not valid JSON ({type(exc).__name__}: {exc}): {shown}"
        return ToolCall(name=name, arguments_error=problem)
    if not isinstance(value, dict):
        return ToolCall(name=name, arguments_error=f"arguments are not a JSON object: {shown}")
    return ToolCall(name=name, arguments=value)
