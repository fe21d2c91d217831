"""Chat completions from an Ollama server, through the official ``ollama`` client.

The client has an ``httpx.Timeout`` of ``timeout_s`` for an answer and
``connect_timeout_s`` to reach the server, so a host that drops packets fails the check
in seconds, not after the system's TCP retries (about two minutes). Options go inside
``options``, with ``keep_alive``; token counts and durations (ns to s) come from the
typed response. ``check`` lists the models and answers that a model is not pulled on a
host (``ollama pull X``) or that Ollama does not answer there. Connection errors,
timeouts, 429 and 5xx are retried with backoff; Ollama's "error parsing tool call"
(HTTP 500) is retried, then the raw text is kept as a plain answer with
``tool_call_error``. A model's hosts form a pool (``ollama_client_config.hosts``): any
of them may answer a run's calls, and the check requires the model on each, with the
same digest.
"""

from __future__ import annotations

import re
import time

import httpx
import ollama

from contreact_events.catalog.chat import AssistantMessage, LLMUsage, ToolCall
from contreact_events.config import ResolvedBackend
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatOutcome, ChatReply, CheckOutcome
from contreact_llm.backends.check_slots import CheckSlots, CheckWindow
from contreact_llm.exceptions import (
    BackendError,
    CallFailed,
    CheckTimedOut,
    HostUnreachable,
    ToolCallParseError,
    TransientBackendError,
)
from contreact_llm.retry import RetryPolicy, with_retries

TOOL_CALL_PARSE_ERROR = "error parsing tool call"
_RAW_TEXT = re.compile(r"raw='(.*)', err=", re.DOTALL)
CHECK_FIX = (
    "is Ollama running there (`ollama serve`), and is ollama_client_config.host the right URL?"
)


def full_name(model: str) -> str:
    """``name:tag`` with Ollama's default tag ``latest`` when none is given."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def pull_hint(model: str, host: str) -> str:
    return f"model '{model}' is not pulled on {host}: run `ollama pull {model}`"


def unreachable(host: str, exc: BaseException) -> str:
    return (
        f"Ollama does not answer at {host} ({type(exc).__name__}: {exc}); start it with "
        "`ollama serve`, or set ollama_client_config.host to a running server"
    )


def _seconds(ns: int | None) -> float:
    return (ns or 0) / 1e9


def classify(exc: Exception, host: str) -> BackendError:
    """The backend error an exception from the client stands for (transient or not)."""
    if isinstance(exc, ollama.ResponseError):
        message = f"Ollama at {host} answered HTTP {exc.status_code}: {exc.error}"
        if exc.status_code == 500 and TOOL_CALL_PARSE_ERROR in exc.error:
            found = _RAW_TEXT.search(exc.error)
            return ToolCallParseError(message, found.group(1) if found else exc.error)
        if exc.status_code == 429 or exc.status_code >= 500:
            return TransientBackendError(message)
        return BackendError(message)
    if isinstance(exc, httpx.ConnectTimeout):
        return HostUnreachable(
            f"Ollama at {host} did not accept a connection within the connect timeout "
            "(ollama_client_config.connect_timeout_s): is the host right and the server up?"
        )
    if isinstance(exc, httpx.TimeoutException):
        return HostUnreachable(
            f"Ollama at {host} did not answer within the call's timeout "
            "(ollama_client_config.timeout_s)"
        )
    if isinstance(exc, ConnectionError | httpx.TransportError):
        return HostUnreachable(unreachable(host, exc))
    return BackendError(f"Ollama client error talking to {host}: {type(exc).__name__}: {exc}")


UNLIMITED = httpx.Limits(max_connections=None, max_keepalive_connections=None)
"""httpx's own cap (100 connections a client) left out: the host's slots bound the calls
in flight, and a call past a hundred waited for another to end."""


class OllamaBackend:
    name: ResolvedBackend = "ollama"
    structured_output = True

    def __init__(self, retry: RetryPolicy, checks: CheckSlots | None = None) -> None:
        self._retry = retry
        self._checks = checks or CheckSlots()
        self._clients: dict[tuple[str, float | None, float], ollama.AsyncClient] = {}
        self._check_clients: dict[tuple[str, float], ollama.AsyncClient] = {}

    def _client(self, host: str, task: LLMTask) -> ollama.AsyncClient:
        """One client per (host, timeouts). Reaching the server is bounded by the
        short connect timeout; an answer (a long generation) by ``timeout_s``."""
        key = (host, task.timeout_s, task.connect_timeout_s)
        if key not in self._clients:
            timeout = httpx.Timeout(task.timeout_s, connect=task.connect_timeout_s)
            self._clients[key] = ollama.AsyncClient(host=host, timeout=timeout, limits=UNLIMITED)
        return self._clients[key]

    def _check_client(self, host: str, task: LLMTask) -> ollama.AsyncClient:
        """A check's client: a small request, with short timeouts of its own."""
        key = (host, task.connect_timeout_s)
        if key not in self._check_clients:
            answer_s, connect_s = self._checks.client_timeouts(task.connect_timeout_s)
            timeout = httpx.Timeout(answer_s, connect=connect_s)
            self._check_clients[key] = ollama.AsyncClient(host=host, timeout=timeout)
        return self._check_clients[key]

    async def check(self, task: LLMTask) -> CheckOutcome:
        """The model must be on every host of the pool that answers, the same version
        on each (a run's calls may go to any of them); a host of a pool that cannot be
        reached is passed over with a note (the pool serves without it, and takes it
        back once it answers), as long as one host answers. Each host is asked in its
        own queue, and the whole check ends at its time (``check_slots``)."""
        window = self._checks.window(task.deadline)
        pool = task.hosts or (task.host,)
        digests: dict[str, str | None] = {}
        down: dict[str, str] = {}
        for host in pool:
            outcome, unreachable = await self._check_host(task, host, window)
            if unreachable and len(pool) > 1:
                down[host] = outcome.detail
                continue
            if not outcome.ok:
                return outcome
            digests[host] = outcome.model_digest
        if not digests:
            each = "; ".join(down.values())
            detail = f"no host of the pool for model '{task.model}' answers: {each}"
            return CheckOutcome(ok=False, backend="ollama", detail=detail)
        if len(set(digests.values())) > 1:
            versions = ", ".join(f"{host}: {digest}" for host, digest in digests.items())
            return CheckOutcome(
                ok=False,
                backend="ollama",
                detail=f"model '{task.model}' differs between the hosts of the pool "
                f"({versions}): run `ollama pull {task.model}` on each",
            )
        hosts = list(digests)
        where = hosts[0] if len(pool) == 1 else f"{len(hosts)} hosts ({', '.join(hosts)})"
        passed = f"; passed over, not answering: {', '.join(down)}" if down else ""
        return CheckOutcome(
            ok=True,
            backend="ollama",
            detail=f"model '{full_name(task.model)}' is available on {where}{passed}",
            model_digest=digests[hosts[0]],
            model=task.model,
        )

    async def _check_host(
        self, task: LLMTask, host: str, window: CheckWindow
    ) -> tuple[CheckOutcome, bool]:
        """The host's outcome, and whether the host could not be reached at all."""
        client = self._check_client(host, task)
        try:
            listing = await self._checks.call(
                host, window, client.list, server="Ollama", fix=CHECK_FIX
            )
        except CheckTimedOut as exc:
            return CheckOutcome(ok=False, backend="ollama", detail=str(exc)), True
        except Exception as exc:
            error = classify(exc, host)
            unreachable = isinstance(error, HostUnreachable)
            return CheckOutcome(ok=False, backend="ollama", detail=error.args[0]), unreachable
        wanted = full_name(task.model)
        for entry in listing.models:
            if entry.model is not None and full_name(entry.model) == wanted:
                outcome = CheckOutcome(
                    ok=True,
                    backend="ollama",
                    detail=f"model '{entry.model}' is available on {host}",
                    model_digest=entry.digest,
                )
                return outcome, False
        return CheckOutcome(ok=False, backend="ollama", detail=pull_hint(task.model, host)), False

    async def chat(self, task: LLMTask) -> ChatOutcome:
        started = time.monotonic()
        try:
            response, attempts = await with_retries(
                self._retry, lambda: self._chat_once(task), task.deadline, pool=len(task.hosts) > 1
            )
        except CallFailed as failed:
            cause = failed.cause
            if isinstance(cause, ToolCallParseError):
                usage = LLMUsage(
                    wall_s=time.monotonic() - started,
                    done_reason="tool_call_parse_error",
                    attempts=failed.attempts,
                )
                return ChatReply(
                    message=AssistantMessage(content=cause.raw_text),
                    usage=usage,
                    model=task.model,
                    tool_call_error=str(cause),
                )
            down = isinstance(cause, HostUnreachable)
            return ChatFailure(str(cause), cause.transient, failed.attempts, host_down=down)
        usage = LLMUsage(
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
            total_s=_seconds(response.total_duration),
            load_s=_seconds(response.load_duration),
            prompt_eval_s=_seconds(response.prompt_eval_duration),
            eval_s=_seconds(response.eval_duration),
            wall_s=time.monotonic() - started,
            done_reason=response.done_reason,
            attempts=attempts,
        )
        reply = response.message
        message = AssistantMessage(
            content=reply.content or "",
            tool_calls=tuple(
                ToolCall(name=call.function.name, arguments=dict(call.function.arguments))
                for call in reply.tool_calls or ()
            ),
            thinking=reply.thinking,
        )
        return ChatReply(message=message, usage=usage, model=response.model or task.model)

    async def _chat_once(self, task: LLMTask) -> ollama.ChatResponse:
        client = self._client(task.host, task)
        options = dict(task.options)
        think = options.pop("reasoning_effort", None)  # Ollama's `think` levels
        try:
            return await client.chat(
                model=task.model,
                messages=[m.as_ollama() for m in task.messages],
                tools=list(task.tools) or None,
                stream=False,
                think=think,
                options=options or None,
                keep_alive=task.keep_alive,
                format=task.json_schema,  # an analysis: the answer's JSON schema
            )
        except Exception as exc:
            raise classify(exc, task.host) from exc

    async def aclose(self) -> None:
        clients = [*self._clients.values(), *self._check_clients.values()]
        self._clients, self._check_clients = {}, {}
        for client in clients:
            await client.close()  # type: ignore[no-untyped-call]
