"""The ollama backend through the real ``ollama`` client, against a fake server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contreact_events.catalog.chat import ChatMessage
from contreact_events.cognition.model_answer import analysis_json_schema
from contreact_events.core.tools import tool_schemas
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatReply
from contreact_llm.backends import auto as auto_backend
from contreact_llm.backends.embedded import EmbeddedBackend
from contreact_llm.backends.ollama import OllamaBackend
from contreact_llm.retry import RetryPolicy
from tests.support.fake_ollama import FakeOllama, closed_port_host, running_fake_ollama

FAST = RetryPolicy(max_attempts=3, base_s=0.001, max_s=0.01)
OPTIONS = {
    "seed": 7,
    "temperature": 0.3,
    "top_p": 0.9,
    "num_predict": 64,
    "repeat_last_n": 32,
    "repeat_penalty": 1.2,
    "num_ctx": 2048,
}


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with running_fake_ollama(["llama3.2:latest", "qwen3:8b"]) as server:
        yield server


def task(host: str, **changes: Any) -> LLMTask:
    base = LLMTask(
        kind="chat",
        task_id="t-1",
        run_id="run-1",
        backend="ollama",
        model="llama3.2",
        host=host,
        messages=(
            ChatMessage(role="system", content="sys"),
            ChatMessage(role="user", content="Cycle 1 begins."),
        ),
        tools=tool_schemas(),
        options=OPTIONS,
        keep_alive="5m",
    )
    return base.model_copy(update=changes)


async def test_chat_parses_tool_calls_and_usage(fake: FakeOllama) -> None:
    fake.reply("thinking aloud", [("write", {"key": "a", "value": "b"}), ("list", {})])
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "thinking aloud"
    assert [(c.name, c.arguments) for c in outcome.message.tool_calls] == [
        ("write", {"key": "a", "value": "b"}),
        ("list", {}),
    ]
    usage = outcome.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (10, 5)
    assert usage.total_s == pytest.approx(2.0)
    assert usage.load_s == pytest.approx(0.1)
    assert usage.prompt_eval_s == pytest.approx(0.3)
    assert usage.eval_s == pytest.approx(1.5)
    assert usage.done_reason == "stop"
    assert usage.attempts == 1
    assert usage.wall_s > 0
    assert outcome.tool_call_error is None


async def test_options_keep_alive_and_tools_are_sent(fake: FakeOllama) -> None:
    fake.reply("ok")
    backend = OllamaBackend(FAST)
    await backend.chat(task(fake.host))
    await backend.aclose()
    [body] = fake.chat_requests()
    assert body["options"] == OPTIONS
    assert "seed" not in body
    assert "temperature" not in body
    assert body["keep_alive"] == "5m"
    assert body["stream"] is False
    assert [t["function"]["name"] for t in body["tools"]] == [
        t["function"]["name"] for t in tool_schemas()
    ]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_transient_503_is_retried(fake: FakeOllama) -> None:
    fake.fail(503, "overloaded")
    fake.drop_connection()
    fake.reply("third time")
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "third time"
    assert outcome.usage.attempts == 3
    assert len(fake.chat_requests()) == 3


async def test_persistent_failure_gives_up_with_attempts(fake: FakeOllama) -> None:
    fake.fail(500, "out of memory", times=5)
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatFailure)
    assert outcome.attempts == 3
    assert outcome.retryable is True
    assert "out of memory" in outcome.error
    assert len(fake.chat_requests()) == 3


async def test_client_error_is_not_retried(fake: FakeOllama) -> None:
    fake.fail(400, "invalid options")
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatFailure)
    assert (outcome.attempts, outcome.retryable) == (1, False)


async def test_tool_call_parse_error_becomes_text_answer(fake: FakeOllama) -> None:
    error = (
        'error parsing tool call: raw=\'I will write {"key": "x"\', '
        "err=unexpected end of JSON input"
    )
    fake.fail(500, error, times=3)
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == 'I will write {"key": "x"'
    assert outcome.message.tool_calls == ()
    assert outcome.tool_call_error is not None
    assert "error parsing tool call" in outcome.tool_call_error
    assert outcome.usage.attempts == 3


async def test_tool_call_parse_error_then_success(fake: FakeOllama) -> None:
    fake.fail(500, "error parsing tool call: raw='x', err=bad")
    fake.reply("", [("read", {"key": "k"})])
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(fake.host))
    await backend.aclose()
    assert isinstance(outcome, ChatReply)
    assert outcome.tool_call_error is None
    assert outcome.message.tool_calls[0].name == "read"


@pytest.mark.parametrize("model", ["llama3.2", "llama3.2:latest", "qwen3:8b"])
async def test_check_model_present(fake: FakeOllama, model: str) -> None:
    backend = OllamaBackend(FAST)
    outcome = await backend.check(task(fake.host, kind="check", model=model))
    await backend.aclose()
    assert outcome.ok, outcome.detail
    assert outcome.backend == "ollama"
    assert outcome.model_digest is not None


async def test_check_model_missing_says_how_to_pull(fake: FakeOllama) -> None:
    backend = OllamaBackend(FAST)
    outcome = await backend.check(task(fake.host, kind="check", model="qwen3"))
    await backend.aclose()
    assert not outcome.ok
    assert "`ollama pull qwen3`" in outcome.detail
    assert outcome.detail == f"model 'qwen3' is not pulled on {fake.host}: run `ollama pull qwen3`"


async def test_check_unreachable_host_names_it() -> None:
    host = closed_port_host()
    backend = OllamaBackend(FAST)
    outcome = await backend.check(task(host, kind="check"))
    await backend.aclose()
    assert not outcome.ok
    assert host in outcome.detail


async def test_chat_unreachable_host_fails_after_retries() -> None:
    host = closed_port_host()
    backend = OllamaBackend(FAST)
    outcome = await backend.chat(task(host))
    await backend.aclose()
    assert isinstance(outcome, ChatFailure)
    assert outcome.attempts == 3
    assert host in outcome.error


async def test_auto_picks_ollama_when_it_has_the_model(fake: FakeOllama) -> None:
    ollama, embedded = OllamaBackend(FAST), EmbeddedBackend()
    outcome = await auto_backend.resolve(
        task(fake.host, kind="check", backend="auto"), ollama, embedded
    )
    await ollama.aclose()
    assert (outcome.ok, outcome.backend) == (True, "ollama")
    assert "chose ollama" in outcome.detail


@pytest.mark.parametrize("reachable", [True, False])
async def test_auto_falls_back_to_embedded(fake: FakeOllama, reachable: bool) -> None:
    host = fake.host if reachable else closed_port_host()
    ollama, embedded = OllamaBackend(FAST), EmbeddedBackend()
    outcome = await auto_backend.resolve(
        task(host, kind="check", backend="auto", model="mistral"), ollama, embedded
    )
    await ollama.aclose()
    assert (outcome.ok, outcome.backend) == (True, "embedded")
    assert "chose embedded" in outcome.detail
    assert host in outcome.detail
    if reachable:
        assert "`ollama pull mistral`" in outcome.detail


async def test_a_pool_needs_the_same_model_on_every_host(fake: FakeOllama) -> None:
    backend = OllamaBackend(FAST)
    with (
        running_fake_ollama(["llama3.2:latest", "qwen3:8b"]) as same,
        running_fake_ollama(["qwen3:8b"]) as lacking,
        running_fake_ollama(["qwen3:8b", "llama3.2:latest"]) as other_version,
    ):
        pool = (fake.host, same.host)
        ok = await backend.check(task(fake.host, kind="check", hosts=pool))
        missing = await backend.check(
            task(fake.host, kind="check", hosts=(fake.host, lacking.host))
        )
        differs = await backend.check(
            task(fake.host, kind="check", hosts=(fake.host, other_version.host))
        )
    await backend.aclose()
    assert ok.ok and "on 2 hosts" in ok.detail and ok.model_digest
    assert not missing.ok and f"is not pulled on {lacking.host}" in missing.detail
    assert not differs.ok and "differs between the hosts of the pool" in differs.detail
    assert "`ollama pull llama3.2`" in differs.detail


async def test_an_analysis_sends_its_json_schema_as_format_and_a_chat_none(
    fake: FakeOllama,
) -> None:
    schema = analysis_json_schema()
    fake.reply("{}")
    fake.reply("ok")
    backend = OllamaBackend(FAST)
    await backend.chat(task(fake.host, kind="analysis", tools=(), json_schema=schema))
    await backend.chat(task(fake.host))
    await backend.aclose()
    analysis, chat = fake.chat_requests()
    assert analysis["format"] == schema
    assert "format" not in chat or chat["format"] in (None, "")
