"""The embedded backend's prompt (pure): a call without tools after tool calls."""

from __future__ import annotations

from contreact_events.catalog.chat import ChatMessage, ToolCall
from contreact_llm.backends import chat_prompt


def test_a_call_without_tools_still_shows_the_tool_calls_the_model_made() -> None:
    """The final call at the step cap sends no tools; its history showed each tool call
    as an empty assistant turn, and the embedded model answered empty in turn."""
    history = (
        ChatMessage(role="system", content="You are an agent."),
        ChatMessage(role="user", content="Cycle 1 begins."),
        ChatMessage(role="assistant", tool_calls=(ToolCall(name="write", arguments={"key": "k"}),)),
        ChatMessage(role="tool", content="Saved under key 'k'.", tool_name="write"),
    )
    prompt = chat_prompt.render(history, ())
    assert '<|im_start|>assistant\nfunctions.write:\n{"key": "k"}<|im_end|>' in prompt
    assert "<|im_start|>assistant\n<|im_end|>" not in prompt
    assert chat_prompt.uses_call_layout(history, ())
    assert "You have access to the following functions" not in prompt  # no tools now


def test_a_history_without_tool_calls_keeps_the_plain_layout() -> None:
    history = (
        ChatMessage(role="user", content="Hello."),
        ChatMessage(role="assistant", content="Hi."),
    )
    assert not chat_prompt.uses_call_layout(history, ())
    assert "<|im_start|>assistant\nHi.<|im_end|>" in chat_prompt.render(history, ())
