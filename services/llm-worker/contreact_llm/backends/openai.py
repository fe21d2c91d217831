"""Chat completions from an OpenAI-compatible server (OpenRouter, vLLM, llama.cpp's
server), through the official ``openai`` client.

The key: the run config names an environment variable (``api_key_env``); the worker
reads it from its own environment when it builds a client, or, when that variable is
unset, from the file ``<NAME>_FILE`` names (a swarm or Kubernetes secret). It never enters a task,
an event, an export or a log line, and error texts are scrubbed of it.

Options (``model_options``, named as Ollama names them) are mapped by
``request_options``: the OpenAI parameters directly, the sampling options the
compatible servers accept beyond OpenAI's set in the request body, and the options
that configure a server's model load (``num_ctx`` ...) not at all: the model check
says which were not sent.

The client's own retries are off, so the worker's policy rules (connection errors,
timeouts, 408/409/429 and 5xx retried). The mapping: ``temperature``, ``top_p``,
``seed``, ``presence_penalty``, ``frequency_penalty``, ``stop``, ``reasoning_effort``
directly; ``num_predict`` above 0 as ``max_tokens`` (-1 and -2 send no limit);
``top_k``, ``min_p``, ``repeat_last_n`` and ``repeat_penalty`` in the request body,
which api.openai.com itself refuses loudly; ``num_ctx``, ``num_batch``, ``num_thread``
and ``num_keep`` not sent. The run log keeps no tool-call ids, so each call gets
``call_{message}_{index}`` from its place in the conversation (the same in every
request) and each tool result the id of the call it answers. ``check`` checks the key
is there, then lists ``/models`` (a server without the list passes with a note).

A model's servers may form a pool (``openai_client_config.base_urls``, e.g. vLLM on
several GPU hosts), served by the workers' pool as Ollama's hosts are: a server that
cannot be reached (no connection, a dropped one, no connection within
``connect_timeout_s``, no answer within ``timeout_s``) is ``HostUnreachable`` and the
call moves; the check wants the model on every server of the pool that answers.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import openai
from openai import AsyncOpenAI

from contreact_events.catalog.chat import AssistantMessage, ChatMessage, LLMUsage
from contreact_events.config import ResolvedBackend
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatOutcome, ChatReply, CheckOutcome
from contreact_llm.backends.chat_prompt import parse_arguments
from contreact_llm.backends.check_slots import CheckSlots
from contreact_llm.exceptions import (
    BackendError,
    CallFailed,
    CheckTimedOut,
    HostUnreachable,
    TransientBackendError,
)
from contreact_llm.retry import RetryPolicy, with_retries

DIRECT_OPTIONS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "reasoning_effort": "reasoning_effort",
}
"""Ollama-named option -> the chat-completions parameter of the same meaning."""
BODY_OPTIONS = {
    "top_k": ("top_k",),
    "min_p": ("min_p",),
    "repeat_penalty": ("repetition_penalty", "repeat_penalty"),
    "repeat_last_n": ("repeat_last_n",),
}
"""Sampling options beyond OpenAI's set, sent in the request body under the names
OpenRouter and vLLM (``repetition_penalty``) and llama.cpp's server (``repeat_penalty``,
``repeat_last_n``) read; api.openai.com itself refuses them, loudly."""
NOT_SENT = ("num_ctx", "num_batch", "num_thread", "num_keep")
"""They configure how a server loads a model: set on the server, not per request."""
RETRYABLE_STATUS = frozenset({408, 409, 429})
NO_KEY = "no-key"
"""What the client sends when a server needs no key (``api_key_env: null``)."""
CHECK_FIX = "is the server running, and is openai_client_config.base_url the right URL?"


@dataclass(frozen=True)
class RequestOptions:
    params: dict[str, Any]
    body: dict[str, Any]
    not_sent: tuple[str, ...]


def request_options(options: dict[str, Any]) -> RequestOptions:
    """``model_options`` as chat-completions parameters. ``num_predict`` > 0 becomes
    ``max_tokens``; -1 (unlimited) and -2 (fill the context) send no limit."""
    params: dict[str, Any] = {}
    body: dict[str, Any] = {}
    not_sent: list[str] = []
    for name, value in options.items():
        if name in DIRECT_OPTIONS:
            params[DIRECT_OPTIONS[name]] = value
        elif name in BODY_OPTIONS:
            body.update(dict.fromkeys(BODY_OPTIONS[name], value))
        elif name == "num_predict":
            if value > 0:
                params["max_tokens"] = value
        elif name == "stop":
            params["stop"] = list(value)
        else:
            not_sent.append(name)
    return RequestOptions(params, body, tuple(not_sent))


def call_id(message_index: int, call_index: int) -> str:
    """Tool-call ids are not kept in the run log: each call gets one from its place in
    the conversation, the same in every request (``call_3_0``)."""
    return f"call_{message_index}_{call_index}"


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation in the chat-completions format: assistant tool calls with ids
    and JSON-text arguments, each tool result naming the call it answers (results
    follow their calls in order, as the fold appends them)."""
    out: list[dict[str, Any]] = []
    waiting: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                waiting = [call_id(index, j) for j in range(len(message.tool_calls))]
                entry["tool_calls"] = [
                    {
                        "id": waiting[j],
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for j, call in enumerate(message.tool_calls)
                ]
            else:
                entry["content"] = message.content
            out.append(entry)
        elif message.role == "tool":
            answered = waiting.pop(0) if waiting else call_id(index, 0)
            out.append({"role": "tool", "tool_call_id": answered, "content": message.content})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def assistant_message(choice: Any) -> AssistantMessage:
    """The answer of one choice: text, tool calls (unreadable arguments kept as an
    ``arguments_error``), and the reasoning text when the server returns it."""
    message = choice.message
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:  # a custom (non-function) tool call: not ours to run
            continue
        calls.append(parse_arguments(function.name, function.arguments or "{}"))
    extra = message.model_extra or {}
    thinking = extra.get("reasoning") or extra.get("reasoning_content")
    return AssistantMessage(
        content=message.content or "",
        tool_calls=tuple(calls),
        thinking=thinking if isinstance(thinking, str) else None,
    )


def key_from(environ: Mapping[str, str], name: str) -> str:
    """``environ[name]``, or else the content of the file ``environ[name + "_FILE"]``
    names (a mounted secret; its trailing newline dropped); "" when neither is there."""
    key = environ.get(name, "")
    path = environ.get(f"{name}_FILE", "")
    if key or not path:
        return key
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


class OpenAIBackend:
    name: ResolvedBackend = "openai"
    structured_output = True

    def __init__(
        self,
        retry: RetryPolicy,
        environ: dict[str, str] | None = None,
        checks: CheckSlots | None = None,
    ) -> None:
        self._retry = retry
        self._environ = environ if environ is not None else os.environ
        self._checks = checks or CheckSlots()
        self._clients: dict[tuple[str, str | None, float | None, float | None], AsyncOpenAI] = {}
        self._check_clients: dict[tuple[str, str | None, float], AsyncOpenAI] = {}

    def _key(self, task: LLMTask) -> str | None:
        """The key from the worker's environment; None when the task needs none."""
        if task.api_key_env is None:
            return None
        key = key_from(self._environ, task.api_key_env)
        if not key:
            raise BackendError(
                f"the LLM worker has no {task.api_key_env} in its environment: export it "
                f"before `contreact up`, or name a file holding it in {task.api_key_env}_FILE "
                "(the key is read there, never from a config)"
            )
        return key

    def _client(self, task: LLMTask) -> AsyncOpenAI:
        """One client per (server, key, timeouts). In a pool, reaching a server is
        bounded by the short connect timeout, so a silent host is passed over in
        seconds; a server of its own waits ``timeout_s`` for that too, as it always did."""
        connect_s = task.connect_timeout_s if len(task.hosts) > 1 else None
        key = (task.host, task.api_key_env, task.timeout_s, connect_s)
        if key not in self._clients:
            timeout: float | openai.Timeout | None = task.timeout_s
            if connect_s is not None:
                timeout = openai.Timeout(task.timeout_s, connect=connect_s)
            self._clients[key] = AsyncOpenAI(
                api_key=self._key(task) or NO_KEY,
                base_url=task.host,
                timeout=timeout,
                max_retries=0,  # the worker's RetryPolicy retries, as for every backend
            )
        return self._clients[key]

    def _check_client(self, task: LLMTask) -> AsyncOpenAI:
        """A check's client: a small request, with short timeouts of its own."""
        key = (task.host, task.api_key_env, task.connect_timeout_s)
        if key not in self._check_clients:
            answer_s, connect_s = self._checks.client_timeouts(task.connect_timeout_s)
            self._check_clients[key] = AsyncOpenAI(
                api_key=self._key(task) or NO_KEY,
                base_url=task.host,
                timeout=openai.Timeout(answer_s, connect=connect_s),
                max_retries=0,
            )
        return self._check_clients[key]

    def _scrub(self, task: LLMTask, text: str) -> str:
        key = key_from(self._environ, task.api_key_env) if task.api_key_env else ""
        return text.replace(key, "[key]") if key else text

    def classify(self, task: LLMTask, exc: Exception) -> BackendError:
        """The backend error an exception from the client stands for."""
        where = task.host
        if isinstance(exc, BackendError):
            return exc
        if isinstance(exc, openai.APITimeoutError) and isinstance(
            exc.__cause__, httpx.ConnectTimeout
        ):
            return HostUnreachable(
                f"{where} did not accept a connection within the connect timeout "
                f"({task.connect_timeout_s}s, openai_client_config.connect_timeout_s): "
                "is the URL right and the server up?"
            )
        if isinstance(exc, openai.APITimeoutError):
            return HostUnreachable(
                f"{where} did not answer within the call's timeout "
                f"({task.timeout_s}s, openai_client_config.timeout_s)"
            )
        if isinstance(exc, openai.APIConnectionError):
            return HostUnreachable(
                f"no OpenAI-compatible server answers at {where} ({exc.__cause__ or exc}); "
                "check openai_client_config.base_url"
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = f"{where} answered HTTP {status}: {self._scrub(task, exc.message)}"
            if status in (401, 403):
                return BackendError(f"{message} (is the key in {task.api_key_env} valid?)")
            if status == 404:
                return BackendError(f"{message} (does {where} serve model '{task.model}'?)")
            if status in RETRYABLE_STATUS or status >= 500:
                return TransientBackendError(message)
            return BackendError(message)
        text = self._scrub(task, f"{type(exc).__name__}: {exc}")
        return BackendError(f"OpenAI client error talking to {where}: {text}")

    async def check(self, task: LLMTask) -> CheckOutcome:
        """The model must be served by every server of the pool that answers (a run's
        calls may go to any of them); a server of a pool that cannot be reached is
        passed over with a note, as long as one answers."""
        pool = task.hosts or (task.host,)
        if len(pool) == 1:
            return (await self._check_host(task.model_copy(update={"host": pool[0]})))[0]
        passed: list[CheckOutcome] = []
        down: dict[str, str] = {}
        for host in pool:
            outcome, unreachable = await self._check_host(task.model_copy(update={"host": host}))
            if unreachable:
                down[host] = outcome.detail
            elif not outcome.ok:
                return outcome
            else:
                passed.append(outcome)
        if not passed:
            each = "; ".join(down.values())
            detail = f"no host of the pool for model '{task.model}' answers: {each}"
            return CheckOutcome(ok=False, backend="openai", detail=detail)
        note = f"; passed over, not answering: {', '.join(down)}" if down else ""
        details = "; ".join(outcome.detail for outcome in passed)
        return replace(passed[0], detail=details + note)

    async def _check_host(self, task: LLMTask) -> tuple[CheckOutcome, bool]:
        """``task.host``'s outcome, and whether that server could not be reached."""
        options = request_options(task.options)
        unsent = (
            f"; not sent (set on the server): {', '.join(options.not_sent)}"
            if options.not_sent
            else ""
        )

        async def served_models() -> list[str]:
            listing = await self._check_client(task).models.list()
            return [model.id async for model in listing]

        window = self._checks.window(task.deadline)
        try:
            served = await self._checks.call(
                task.host, window, served_models, server="the server", fix=CHECK_FIX
            )
        except CheckTimedOut as exc:
            return CheckOutcome(ok=False, backend="openai", detail=str(exc)), True
        except Exception as exc:
            error = self.classify(task, exc)
            if isinstance(exc, openai.NotFoundError):  # a server that lists no models
                detail = f"{task.host} does not list its models; the first call will tell"
                return CheckOutcome(ok=True, backend="openai", detail=detail + unsent), False
            unreachable = isinstance(error, HostUnreachable)
            return CheckOutcome(ok=False, backend="openai", detail=str(error)), unreachable
        if task.model not in served:
            sample = ", ".join(served[:5]) or "none"
            outcome = CheckOutcome(
                ok=False,
                backend="openai",
                detail=f"model '{task.model}' is not served by {task.host} "
                f"({len(served)} model(s) listed, e.g. {sample})",
            )
            return outcome, False
        outcome = CheckOutcome(
            ok=True,
            backend="openai",
            detail=f"model '{task.model}' is served by {task.host}{unsent}",
            model=task.model,
        )
        return outcome, False

    async def chat(self, task: LLMTask) -> ChatOutcome:
        started = time.monotonic()
        try:
            completion, attempts = await with_retries(
                self._retry, lambda: self._chat_once(task), task.deadline, pool=len(task.hosts) > 1
            )
        except CallFailed as failed:
            cause = failed.cause
            down = isinstance(cause, HostUnreachable)
            return ChatFailure(str(cause), cause.transient, failed.attempts, host_down=down)
        if not completion.choices:
            return ChatFailure(f"{task.host} answered without a choice", False, attempts)
        choice = completion.choices[0]
        usage = completion.usage
        return ChatReply(
            message=assistant_message(choice),
            usage=LLMUsage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                wall_s=time.monotonic() - started,
                done_reason=choice.finish_reason,
                attempts=attempts,
                cost=provider_cost(usage),
                cost_source="provider" if provider_cost(usage) is not None else None,
            ),
            model=completion.model or task.model,
        )

    async def _chat_once(self, task: LLMTask) -> Any:
        options = request_options(task.options)
        try:
            return await self._client(task).chat.completions.create(
                model=task.model,
                messages=openai_messages(task.messages),  # type: ignore[arg-type]
                tools=list(task.tools) or openai.omit,  # type: ignore[arg-type]
                stream=False,
                response_format=_response_format(task),
                extra_body=options.body or None,
                **options.params,
            )
        except Exception as exc:
            raise self.classify(task, exc) from exc

    async def aclose(self) -> None:
        clients = [*self._clients.values(), *self._check_clients.values()]
        self._clients, self._check_clients = {}, {}
        for client in clients:
            await client.close()


def provider_cost(usage: Any) -> float | None:
    """The provider's own figure for the call (OpenRouter's usage accounting puts it in
    ``usage.cost``, in credits, which are dollars), or None when it gives none."""
    extra = getattr(usage, "model_extra", None) or {}
    cost = extra.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None


def _response_format(task: LLMTask) -> Any:
    """A task with the answer's JSON schema (an analysis, an evaluator's follow-up):
    structured output, named after the schema's title; else none."""
    if task.json_schema is None:
        return openai.omit
    name = "operator_exchange_analysis" if task.kind == "analysis" else "answer"
    title = task.json_schema.get("title")
    if task.kind == "chat" and isinstance(title, str) and re.fullmatch(r"[\w-]{1,64}", title):
        name = title
    schema = {"name": name, "schema": task.json_schema}
    return {"type": "json_schema", "json_schema": schema}
