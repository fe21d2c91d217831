"""Replies from the run's script, for tests and benchmarks (no model at all).

A reply is chosen by the run's LLM call index, with per-reply latency and injected
(transient) errors. It stands in for an Ollama host: its calls are routed and limited
on the configured Ollama host(s) like real ones.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from contreact_events.catalog.chat import AssistantMessage, LLMUsage, ToolCall
from contreact_events.config import ResolvedBackend, ScriptConfig, ScriptedReply
from contreact_events.config.spend import message_text
from contreact_events.config.spend import prompt_tokens as estimated_prompt
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatOutcome, ChatReply, CheckOutcome
from contreact_llm.exceptions import (
    BackendError,
    CallFailed,
    ScriptExhausted,
    TransientBackendError,
)
from contreact_llm.retry import RetryPolicy, with_retries

MODEL_NAME = "scripted"


def pick_reply(script: ScriptConfig, call_index: int) -> ScriptedReply:
    """The reply for this call: indexed by call number, wrapping when ``repeat``."""
    count = len(script.replies)
    if call_index < count:
        return script.replies[call_index]
    if script.repeat:
        return script.replies[call_index % count]
    raise ScriptExhausted(
        f"script exhausted at call {call_index} (it has {count} replies and repeat is off)"
    )


def substitute(text: str, task: LLMTask) -> str:
    """Fill ``{cycle}`` and ``{step}``; every other brace is left as written."""
    return text.replace("{cycle}", str(task.cycle)).replace("{step}", str(task.step))


def _arguments(arguments: dict[str, Any], task: LLMTask) -> dict[str, Any]:
    return {k: substitute(v, task) if isinstance(v, str) else v for k, v in arguments.items()}


def prompt_tokens(task: LLMTask) -> int:
    """What the scripted "model" reports reading: the messages' text and the tools'
    definitions at about four characters a token (``estimated_tokens``), so a scripted
    run's prompts grow with its history as a model's do, and cost what they would."""
    texts = (
        message_text(m.content, ((c.name, c.arguments) for c in m.tool_calls))
        for m in task.messages
    )
    return estimated_prompt(texts, task.tools)


class ScriptedBackend:
    name: ResolvedBackend = "scripted"
    structured_output = False

    def __init__(self, retry: RetryPolicy) -> None:
        self._retry = retry

    async def check(self, task: LLMTask) -> CheckOutcome:
        if task.script is None:
            return CheckOutcome(
                ok=False,
                backend="scripted",
                detail="backend 'scripted' needs a 'script' in the run config (replies to give)",
            )
        replies = len(task.script.replies)
        repeat = ", repeated" if task.script.repeat else ""
        detail = f"script of {replies} replies{repeat}"
        return CheckOutcome(ok=True, backend="scripted", detail=detail)

    async def chat(self, task: LLMTask) -> ChatOutcome:
        started = time.monotonic()
        try:
            message, attempts = await with_retries(
                self._retry, lambda: self._reply_once(task), task.deadline
            )
        except CallFailed as failed:
            return ChatFailure(str(failed.cause), failed.cause.transient, failed.attempts)
        usage = LLMUsage(
            prompt_tokens=prompt_tokens(task),
            completion_tokens=len(message.content.split()),
            wall_s=time.monotonic() - started,
            done_reason="stop",
            attempts=attempts,
        )
        return ChatReply(message=message, usage=usage, model=MODEL_NAME)

    async def _reply_once(self, task: LLMTask) -> AssistantMessage:
        if task.script is None:
            raise BackendError("backend 'scripted' got a task without a script")
        if task.kind == "analysis":
            answers = task.script.analysis_replies
            if not answers:
                raise BackendError("the script has no analysis_replies")
            reply = answers[(task.cycle - 1) % len(answers)]
        else:
            reply = pick_reply(task.script, task.call_index)
        if reply.latency_ms:
            await asyncio.sleep(reply.latency_ms / 1000)
        if reply.error is not None:
            text = substitute(reply.error, task)
            raise TransientBackendError(text) if reply.transient else BackendError(text)
        return AssistantMessage(
            content=substitute(reply.content, task),
            tool_calls=tuple(
                ToolCall(name=call.name, arguments=_arguments(call.arguments, task))
                for call in reply.tool_calls
            ),
        )

    async def aclose(self) -> None:
        return None
