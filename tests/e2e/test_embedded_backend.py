"""The embedded backend for real: Gemma 3 270M through llama.cpp, no server."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from contreact_events.catalog.chat import ChatMessage, ToolCall
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.config import parse_run_config
from contreact_events.core.fold import final_call_note
from contreact_events.core.tools import ALL_TOOLS, system_prompt_with_tools, tool_schemas
from contreact_events.protocol import paper_system_prompt
from contreact_events.wire.answers import llm_responded
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatReply
from contreact_llm.backends.embedded import EmbeddedBackend
from contreact_llm.backends.ollama import OllamaBackend
from contreact_llm.handler import LLMTaskHandler
from contreact_llm.retry import RetryPolicy
from tests.support.fake_ollama import closed_port_host

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[2] / "configs" / "sample.yaml"


def task(**changes: object) -> LLMTask:
    base = LLMTask(
        kind="chat",
        task_id="t",
        run_id="r",
        backend="embedded",
        model="gemma3:270m",
        host=closed_port_host(),
        messages=(
            ChatMessage(role="system", content="You are an agent with a memory."),
            ChatMessage(role="user", content="Cycle 1 begins."),
        ),
        tools=tool_schemas(),
        options={"num_predict": 64, "seed": 42, "temperature": 0.7, "num_ctx": 2048},
    )
    return base.model_copy(update=changes)


async def test_auto_check_resolves_to_embedded() -> None:
    handler = LLMTaskHandler(
        {"ollama": OllamaBackend(RetryPolicy(1, 0.0)), "embedded": EmbeddedBackend()},
        inbox=None,  # type: ignore[arg-type]
    )
    message = await handler.answer(task(kind="check", backend="auto"))
    assert message.data["ok"] is True
    assert message.data["backend"] == "embedded"
    assert "chose embedded" in message.data["detail"]
    # The run records which model file answered: its digest, as Ollama reports one.
    digest = message.data["model_digest"]
    assert digest.startswith("sha256:") and len(digest) == 7 + 64


async def test_chat_with_tools_gives_a_valid_answer() -> None:
    backend = EmbeddedBackend()
    started = time.monotonic()
    outcome = await backend.chat(task())
    took = time.monotonic() - started
    print(
        f"\nembedded chat took {took:.2f}s (load {outcome.usage.load_s:.2f}s)"
        if isinstance(outcome, ChatReply)
        else ""
    )
    assert isinstance(outcome, ChatReply)
    message = outcome.message
    assert message.content.strip() or message.tool_calls
    for call in message.tool_calls:
        assert call.name in ALL_TOOLS
        assert isinstance(call.arguments, dict)
    assert 0 < outcome.usage.completion_tokens <= 64
    assert outcome.usage.prompt_tokens > 0
    answer = llm_responded(task(), message, outcome.usage, outcome.model)
    event = answer.to_event(datetime.now(UTC))
    assert isinstance(event, LLMResponded)


async def test_long_history_is_trimmed_to_the_context() -> None:
    history = tuple(
        ChatMessage(role="user" if i % 2 else "assistant", content="word " * 200) for i in range(12)
    )
    long = task(
        messages=(task().messages[0], *history, ChatMessage(role="user", content="Go.")),
        options={"num_predict": 16, "seed": 1, "num_ctx": 1024},
    )
    outcome = await EmbeddedBackend().chat(long)
    assert isinstance(outcome, ChatReply)
    assert outcome.usage.done_reason is not None
    assert "dropped" in outcome.usage.done_reason
    assert outcome.usage.prompt_tokens <= 1024


async def test_the_final_call_without_tools_gives_a_written_reflection() -> None:
    """At the step cap the model is called without tools: the embedded model then
    writes text, so the demo's cycles end on a reflection, not on an empty answer."""
    final = task(
        tools=(),
        messages=(
            *task().messages,
            ChatMessage(
                role="user",
                content="Tools are off now: write your note to yourself for the next cycle.",
            ),
        ),
    )
    outcome = await EmbeddedBackend().chat(final)
    assert isinstance(outcome, ChatReply)
    assert outcome.message.tool_calls == ()
    assert outcome.message.content.strip()


def demo_final_call() -> LLMTask:
    """Cycle 1's last call of `make demo` as it ran (configs/sample.yaml's options, the
    paper's prompt, the tool calls the 270M model made, in the order of the tool list):
    the history it sends has tool calls and no text answer."""
    config = parse_run_config({**yaml.safe_load(SAMPLE.read_text()), "run_id": "demo"})
    calls = [
        ("write", {"key": "value", "value": "test123"}, "Saved under key 'value'."),
        ("read", {"key": "value"}, "test123"),
        ("list", {}, "value"),
        ("delete", {"key": "value"}, "Deleted key 'value'."),
        ("pattern_search", {"pattern": "test123"}, "No keys contain 'test123'."),
        ("send_message_to_operator", {"message": "test123"}, final_call_note(6)),
    ]
    history: list[ChatMessage] = [
        ChatMessage(role="system", content=system_prompt_with_tools(paper_system_prompt())),
        ChatMessage(role="user", content="Cycle 1 begins."),
    ]
    for name, arguments, result in calls:
        call = ToolCall(name=name, arguments=arguments)
        history += [
            ChatMessage(role="assistant", content="", tool_calls=(call,)),
            ChatMessage(role="tool", content=result, tool_name=name),
        ]
    return task(tools=(), messages=tuple(history), options=config.model_options.as_options())


async def test_the_demos_final_call_after_tool_calls_gives_a_written_reflection() -> None:
    """The demo's reflections were empty: without tools the history's tool-call turns
    were shown as empty assistant turns, and the model answered empty in turn."""
    outcome = await EmbeddedBackend().chat(demo_final_call())
    assert isinstance(outcome, ChatReply)
    print(f"\nthe demo's final call answered {outcome.message.content!r}")
    assert outcome.message.tool_calls == ()
    assert outcome.message.content.strip()
    assert outcome.usage.completion_tokens > 0


async def test_a_json_schema_holds_the_answer_to_it() -> None:
    """Structured output on the embedded model: the evaluator's follow-up schema
    becomes llama.cpp's grammar, so even the 270M base model answers that JSON."""
    import json

    import jsonschema

    from contreact_assessor.questions import question, schema
    from contreact_events.instruments import load_instrument

    pei = load_instrument("pei")
    messages = (
        ChatMessage(role="user", content=pei.prompt),
        ChatMessage(role="assistant", content="Somewhere around the middle, I suppose."),
        ChatMessage(role="user", content=question(pei)),
    )
    reply = await EmbeddedBackend().chat(
        task(tools=(), messages=messages, json_schema=schema(pei), options={"num_predict": 48})
    )
    assert isinstance(reply, ChatReply), reply
    jsonschema.validate(json.loads(reply.message.content), schema(pei))
