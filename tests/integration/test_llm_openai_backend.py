"""The OpenAI-compatible backend through the real ``openai`` client, against a
stand-in server on a real socket: options, tool calls both ways, usage, errors, the
key read from the environment and never repeated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog.chat import ChatMessage, ToolCall
from contreact_events.cognition.model_answer import analysis_json_schema
from contreact_events.core.tools import tool_schemas
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatReply
from contreact_llm.backends.openai import OpenAIBackend, openai_messages, request_options
from contreact_llm.retry import RetryPolicy
from tests.support.fake_ollama import closed_port_host
from tests.support.fake_openai import FakeOpenAI, running_fake_openai

FAST = RetryPolicy(max_attempts=3, base_s=0.001, max_s=0.01)
KEY = "sk-or-v1-0123456789abcdef-secret"
ENV = {"ROUTER_KEY": KEY}
OPTIONS = {
    "seed": 7,
    "temperature": 0.2,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "num_predict": 1200,
    "repeat_penalty": 1.1,
    "num_ctx": 8192,
    "stop": ["<end>"],
    "reasoning_effort": "medium",
}
MODEL = "anthropic/claude-sonnet-4"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai([MODEL, "openai/o3"], key=KEY) as server:
        yield server


def task(base_url: str, **changes: Any) -> LLMTask:
    base = LLMTask(
        kind="chat",
        task_id="t-1",
        run_id="run-1",
        backend="openai",
        model=MODEL,
        host=base_url,
        hosts=(base_url,),
        api_key_env="ROUTER_KEY",
        timeout_s=5.0,
        messages=(
            ChatMessage(role="system", content="sys"),
            ChatMessage(role="user", content="Cycle 1 begins."),
        ),
        tools=tool_schemas(),
        options=OPTIONS,
    )
    return base.model_copy(update=changes)


async def chat(fake: FakeOpenAI, **changes: Any) -> ChatReply | ChatFailure:
    backend = OpenAIBackend(FAST, environ=ENV)
    try:
        return await backend.chat(task(fake.base_url, **changes))
    finally:
        await backend.aclose()


async def test_answers_with_tool_calls_usage_and_reasoning(fake: FakeOpenAI) -> None:
    fake.reply(
        "let me look",
        [("write", {"key": "a", "value": "b"}), ("list", {})],
        prompt_tokens=120,
        completion_tokens=30,
        model="anthropic/claude-4-sonnet-20250522",
        reasoning="I should note this.",
    )
    outcome = await chat(fake)
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "let me look"
    assert [(c.name, c.arguments) for c in outcome.message.tool_calls] == [
        ("write", {"key": "a", "value": "b"}),
        ("list", {}),
    ]
    assert outcome.message.thinking == "I should note this."
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (120, 30)
    assert outcome.usage.done_reason == "tool_calls"
    assert outcome.usage.attempts == 1 and outcome.usage.wall_s > 0
    assert outcome.model == "anthropic/claude-4-sonnet-20250522"  # what the server says ran


async def test_options_tools_and_key_are_sent(fake: FakeOpenAI) -> None:
    fake.reply("a reflection")
    await chat(fake)
    (received,) = [r for r in fake.received if r.path.endswith("/chat/completions")]
    body = received.body
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == MODEL and body["stream"] is False
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.2, 0.95, 7)
    assert body["max_tokens"] == 1200 and body["stop"] == ["<end>"]
    assert body["reasoning_effort"] == "medium"
    assert (body["top_k"], body["min_p"]) == (40, 0.05)
    assert body["repetition_penalty"] == body["repeat_penalty"] == 1.1
    assert "num_ctx" not in body and "num_predict" not in body
    assert [t["function"]["name"] for t in body["tools"]] == [
        t["function"]["name"] for t in tool_schemas()
    ]


def test_option_mapping_says_what_is_not_sent() -> None:
    mapped = request_options({"num_predict": -1, "num_ctx": 4096, "num_thread": 4, "seed": 1})
    assert mapped.params == {"seed": 1}  # -1 (unlimited) sends no limit
    assert mapped.body == {}
    assert mapped.not_sent == ("num_ctx", "num_thread")


async def test_tool_calls_and_results_go_back_with_matching_ids(fake: FakeOpenAI) -> None:
    history = (
        ChatMessage(role="system", content="sys"),
        ChatMessage(role="user", content="Cycle 1 begins."),
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=(
                ToolCall(name="write", arguments={"key": "k", "value": "v"}),
                ToolCall(name="read", arguments={"key": "k"}),
            ),
        ),
        ChatMessage(role="tool", content="Stored k.", tool_name="write"),
        ChatMessage(role="tool", content="v", tool_name="read"),
        ChatMessage(role="assistant", content="Noted."),
        ChatMessage(role="user", content="Cycle 2 begins."),
    )
    fake.reply("done")
    outcome = await chat(fake, messages=history)
    assert isinstance(outcome, ChatReply)
    sent = fake.chat_requests()[0]["messages"]
    assert sent == openai_messages(history)
    call = sent[2]
    assert call["role"] == "assistant" and call["content"] is None
    ids = [c["id"] for c in call["tool_calls"]]
    assert [c["function"]["arguments"] for c in call["tool_calls"]] == [
        '{"key": "k", "value": "v"}',
        '{"key": "k"}',
    ]
    assert [(m["role"], m["tool_call_id"]) for m in sent[3:5]] == [("tool", i) for i in ids]
    assert len(set(ids)) == 2
    assert sent[5] == {"role": "assistant", "content": "Noted."}


async def test_unreadable_tool_arguments_are_kept_as_an_error(fake: FakeOpenAI) -> None:
    fake.reply(None, [("write", '{"key": "a", "value": '), ("list", "")])
    outcome = await chat(fake)
    assert isinstance(outcome, ChatReply)
    broken, empty = outcome.message.tool_calls
    assert broken.name == "write" and broken.arguments == {}
    assert broken.arguments_error and "not valid JSON" in broken.arguments_error
    assert (empty.name, empty.arguments, empty.arguments_error) == ("list", {}, None)
    assert outcome.message.content == ""


async def test_transient_errors_are_retried(fake: FakeOpenAI) -> None:
    fake.fail(429, "slow down")
    fake.drop_connection()
    fake.reply("made it")
    outcome = await chat(fake)
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "made it" and outcome.usage.attempts == 3


async def test_retries_give_up_with_the_last_error(fake: FakeOpenAI) -> None:
    fake.fail(503, "overloaded", times=3)
    outcome = await chat(fake)
    assert isinstance(outcome, ChatFailure)
    assert outcome.retryable and outcome.attempts == 3
    assert "HTTP 503" in outcome.error and "overloaded" in outcome.error


async def test_a_bad_request_is_not_retried_and_the_key_never_shows(fake: FakeOpenAI) -> None:
    fake.fail(400, f"Unrecognized request argument supplied: top_k (key {KEY})")
    outcome = await chat(fake)
    assert isinstance(outcome, ChatFailure)
    assert not outcome.retryable and outcome.attempts == 1
    assert "HTTP 400" in outcome.error and "top_k" in outcome.error
    assert KEY not in outcome.error and "[key]" in outcome.error


async def test_a_refused_key_says_which_variable_to_fix(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(FAST, environ={"ROUTER_KEY": "sk-wrong"})
    outcome = await backend.chat(task(fake.base_url))
    await backend.aclose()
    assert isinstance(outcome, ChatFailure) and not outcome.retryable
    assert "HTTP 401" in outcome.error and "ROUTER_KEY" in outcome.error
    assert "sk-wrong" not in outcome.error


async def test_a_missing_key_fails_the_check_with_the_fix(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(FAST, environ={})
    checked = await backend.check(task(fake.base_url, kind="check"))
    failed = await backend.chat(task(fake.base_url))
    await backend.aclose()
    assert not checked.ok
    assert "no ROUTER_KEY in its environment" in checked.detail
    assert isinstance(failed, ChatFailure) and "ROUTER_KEY" in failed.error
    assert fake.received == []  # nothing was sent without a key


async def test_check_finds_the_model_and_names_the_options_not_sent(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(FAST, environ=ENV)
    found = await backend.check(task(fake.base_url, kind="check"))
    missing = await backend.check(task(fake.base_url, kind="check", model="openai/gpt-9"))
    await backend.aclose()
    assert found.ok and found.backend == "openai" and found.model == MODEL
    assert "not sent (set on the server): num_ctx" in found.detail
    assert not missing.ok
    assert "'openai/gpt-9' is not served by" in missing.detail and MODEL in missing.detail


async def test_a_server_without_a_model_list_passes_the_check(fake: FakeOpenAI) -> None:
    fake.list_models = False
    backend = OpenAIBackend(FAST, environ=ENV)
    outcome = await backend.check(task(fake.base_url, kind="check"))
    await backend.aclose()
    assert outcome.ok and "does not list its models" in outcome.detail


async def test_a_server_without_keys(fake: FakeOpenAI) -> None:
    fake.key = None
    fake.reply("local answer")
    outcome = await chat(fake, api_key_env=None)
    assert isinstance(outcome, ChatReply)
    assert fake.received[-1].headers["authorization"] == "Bearer no-key"


async def test_nobody_listening() -> None:
    base_url = f"{closed_port_host()}/v1"
    backend = OpenAIBackend(FAST, environ=ENV)
    checked = await backend.check(task(base_url, kind="check"))
    failed = await backend.chat(task(base_url))
    await backend.aclose()
    assert not checked.ok and "no OpenAI-compatible server answers" in checked.detail
    assert isinstance(failed, ChatFailure) and failed.retryable and failed.attempts == 3


async def test_an_analysis_asks_for_its_json_schema_and_a_chat_does_not(
    fake: FakeOpenAI,
) -> None:
    schema = analysis_json_schema()
    fake.reply("{}")
    fake.reply("a reflection")
    await chat(fake, kind="analysis", tools=(), json_schema=schema)
    await chat(fake)
    analysis, plain = fake.chat_requests()
    assert analysis["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "operator_exchange_analysis", "schema": schema},
    }
    assert "response_format" not in plain


async def test_the_key_from_a_secret_file_is_sent_and_never_shows(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    """A swarm secret: ROUTER_KEY unset, ROUTER_KEY_FILE names the mounted file (its
    trailing newline dropped); the key is sent and scrubbed from errors as before."""
    secret = tmp_path / "router_key"
    secret.write_text(KEY + "\n")
    backend = OpenAIBackend(FAST, environ={"ROUTER_KEY_FILE": str(secret)})
    fake.fail(400, f"Unrecognized request argument supplied: top_k (key {KEY})")
    outcome = await backend.chat(task(fake.base_url))
    await backend.aclose()
    (received,) = [r for r in fake.received if r.path.endswith("/chat/completions")]
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert isinstance(outcome, ChatFailure)
    assert KEY not in outcome.error and "[key]" in outcome.error


async def test_an_unreadable_secret_file_is_a_missing_key(fake: FakeOpenAI, tmp_path: Path) -> None:
    backend = OpenAIBackend(FAST, environ={"ROUTER_KEY_FILE": str(tmp_path / "absent")})
    checked = await backend.check(task(fake.base_url, kind="check"))
    await backend.aclose()
    assert not checked.ok and "ROUTER_KEY_FILE" in checked.detail
    assert fake.received == []
