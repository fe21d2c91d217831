"""The scripted backend: replies by call index, repeat, exhaustion, placeholders, retries."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.config import ScriptConfig
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatReply
from contreact_llm.backends.scripted import ScriptedBackend
from contreact_llm.retry import RetryPolicy

FAST = RetryPolicy(max_attempts=3, base_s=0.001, max_s=0.01)


def task(script: dict[str, Any] | None, call_index: int = 0, **changes: Any) -> LLMTask:
    fields: dict[str, Any] = {"kind": "chat", **changes}
    return LLMTask(
        task_id="t",
        run_id="r",
        backend="scripted",
        model="m",
        host="",
        call_index=call_index,
        cycle=3,
        step=2,
        script=ScriptConfig.model_validate(script) if script is not None else None,
        **fields,
    )


THREE = {
    "replies": [
        {"content": "zero"},
        {"content": "one"},
        {"tool_calls": [{"name": "write", "arguments": {"key": "c{cycle}"}}]},
    ]
}


@pytest.mark.parametrize(("index", "content"), [(0, "zero"), (1, "one")])
async def test_reply_by_call_index(index: int, content: str) -> None:
    outcome = await ScriptedBackend(FAST).chat(task(THREE, index))
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == content


async def test_tool_calls_with_substituted_arguments() -> None:
    outcome = await ScriptedBackend(FAST).chat(task(THREE, 2))
    assert isinstance(outcome, ChatReply)
    [call] = outcome.message.tool_calls
    assert (call.name, call.arguments) == ("write", {"key": "c3"})


async def test_repeat_wraps_around() -> None:
    outcome = await ScriptedBackend(FAST).chat(task({**THREE, "repeat": True}, 4))
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "one"


async def test_exhausted_script_fails_without_retry() -> None:
    outcome = await ScriptedBackend(FAST).chat(task(THREE, 3))
    assert isinstance(outcome, ChatFailure)
    assert "script exhausted at call 3" in outcome.error
    assert (outcome.retryable, outcome.attempts) == (False, 1)


async def test_placeholders_without_str_format() -> None:
    script = {"replies": [{"content": "cycle {cycle} step {step} {not a field} {0} {"}]}
    outcome = await ScriptedBackend(FAST).chat(task(script))
    assert isinstance(outcome, ChatReply)
    assert outcome.message.content == "cycle 3 step 2 {not a field} {0} {"


async def test_transient_error_is_retried_then_fails() -> None:
    script = {"replies": [{"error": "flaky at {cycle}", "transient": True}]}
    outcome = await ScriptedBackend(FAST).chat(task(script))
    assert isinstance(outcome, ChatFailure)
    assert outcome.error == "flaky at 3"
    assert (outcome.retryable, outcome.attempts) == (True, 3)


async def test_permanent_error_is_not_retried() -> None:
    outcome = await ScriptedBackend(FAST).chat(task({"replies": [{"error": "broken"}]}))
    assert isinstance(outcome, ChatFailure)
    assert (outcome.retryable, outcome.attempts) == (False, 1)


async def test_latency_is_waited_and_counted() -> None:
    outcome = await ScriptedBackend(FAST).chat(task({"replies": [{"latency_ms": 50}]}))
    assert isinstance(outcome, ChatReply)
    assert outcome.usage.wall_s >= 0.05


async def test_check_needs_a_script() -> None:
    backend = ScriptedBackend(FAST)
    assert (await backend.check(task(THREE, kind="check"))).ok
    missing = await backend.check(task(None, kind="check"))
    assert not missing.ok
    assert "script" in missing.detail


async def test_the_worker_cuts_runaway_answer_text_and_says_so() -> None:
    from contreact_llm.handler import LLMTaskHandler

    handler = LLMTaskHandler(
        {"scripted": ScriptedBackend(FAST)},
        inbox=None,  # type: ignore[arg-type]
    )
    long = {"replies": [{"content": "x" * 10_000}]}
    message = await handler.answer(task(long, max_content_chars=100))
    assert message.data["message"]["content"] == "x" * 100
    assert "content cut at 100 of 10000 characters" in message.data["usage"]["done_reason"]
    whole = await handler.answer(task(long, max_content_chars=None))
    assert len(whole.data["message"]["content"]) == 10_000
