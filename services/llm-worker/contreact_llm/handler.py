"""LLMTask -> backend -> InboxMessage on the orchestrator's inbox.

The handler returns only once the answer is in the inbox (so the task is acked
after its result is written), and never raises for a failed call: an unexpected
error becomes the task's failure answer. Limits are not its business: the
scheduler starts a chat task only once it holds a slot on a host.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.assessments import calls as evaluator_calls
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.task_gate import TaskGate
from contreact_events.config.spend import ModelPrice
from contreact_events.core.exchange_prompt import analysis_from_answer, heuristic_instead
from contreact_events.wire.answers import (
    llm_failed,
    llm_responded,
    model_checked,
    operator_message_analyzed,
)
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.backends import Backends, ChatReply, CheckOutcome, LLMBackend
from contreact_llm.backends import auto as auto_backend
from contreact_llm.backends.check_slots import CheckSlots, did_not_answer, seconds_left
from contreact_llm.exceptions import HostDown
from contreact_llm.retry import RetryPolicy
from contreact_llm.settings import LLMWorkerSettings

log = logging.getLogger(__name__)


class LLMTaskHandler:
    def __init__(
        self, backends: Mapping[str, LLMBackend], inbox: Inbox, gate: TaskGate | None = None
    ) -> None:
        self._backends = (
            backends if isinstance(backends, Backends) else Backends({}, built=backends)
        )
        self.inbox = inbox
        self._gate = gate

    async def refusal(self, task: LLMTask, raw: bytes | None = None) -> str | None:
        """Why ``task`` is not worth a call (its run waits on something else now: it
        was cancelled, moved on, or sent the task again; an assessment job's call:
        the job waits on another call, or on none), else None. ``raw``: the bytes the
        task arrived as (their digest is checked as they are)."""
        if self._gate is None:
            return None
        if task.kind == "analysis":  # no effect hangs on it: the core checks its answer
            return analysis_refusal(task)
        if task.reply_to is not None:
            return await evaluator_calls.refusal(self.inbox.redis, task, raw)
        return await self._gate.refusal(task.run_id, task.task_id, task, task.deadline, raw=raw)

    async def take(self, task: LLMTask) -> LLMTask:
        """The worker starts ``task`` now. An assessment job's call: its job is told (the
        gate's ``taken`` mark) and its deadline starts now (``call_timeout_s``), so the
        time it waited behind live runs does not count against it."""
        if task.reply_to is None:
            return task
        return await evaluator_calls.take(self.inbox.redis, task)

    def queue_answer(self, pipe: Pipeline, task: LLMTask, message: InboxMessage) -> None:
        """Add the answer's send to a caller's pipeline: to the run's inbox, or to the
        reply list of the assessment job that asked (``reply_to``)."""
        if task.reply_to is not None:
            evaluator_calls.queue_reply(pipe, task.reply_to, message)
        else:
            self.inbox.queue(pipe, message)

    async def __call__(self, task: LLMTask) -> None:
        refusal = await self.refusal(task)
        if refusal is not None:  # no call for nothing
            log.info("LLM task dropped: %s", refusal)
            return
        message = await self.reply(await self.take(task))
        async with self.inbox.redis.pipeline(transaction=False) as pipe:
            self.queue_answer(pipe, task, message)
            await pipe.execute()

    async def reply(self, task: LLMTask) -> InboxMessage:
        """The answer to ``task``; an unexpected error becomes its failure answer.
        Raises ``HostDown`` when a call of a pool could not reach its host."""
        try:
            return await self.answer(task)
        except HostDown:
            raise  # the call of a pool moves to another host (``scheduling.pool_calls``)
        except Exception as exc:
            log.exception("task %s of run %s failed unexpectedly", task.task_id, task.run_id)
            return failure(task, f"llm-worker error: {type(exc).__name__}: {exc}")

    async def answer(self, task: LLMTask) -> InboxMessage:
        """The inbox message answering ``task`` (no sending)."""
        if task.kind == "check":
            outcome = await self.check(task)
            return model_checked(
                task,
                ok=outcome.ok,
                backend=outcome.backend,
                detail=outcome.detail,
                model_digest=outcome.model_digest,
                model=outcome.model,
            )
        if task.kind == "analysis":
            return await self.analyse(task)
        backend_name: str = task.backend
        if backend_name == "auto":  # the check resolves it; the run records the choice
            error = "a chat task needs a resolved backend, not 'auto' (the model check resolves it)"
            return llm_failed(task, error, retryable=False, attempts=1)
        backend = self._backends[backend_name]
        if task.json_schema is not None and not backend.structured_output:
            error = (
                f"the {backend_name} backend has no structured output (a JSON schema for "
                "the answer): this call needs it"
            )
            return llm_failed(task, error, retryable=False, attempts=1)
        answer = await backend.chat(task)
        if isinstance(answer, ChatReply):
            answer = priced(capped(answer, task.max_content_chars), task.price)
            return llm_responded(
                task, answer.message, answer.usage, answer.model, answer.tool_call_error
            )
        if answer.host_down and len(task.hosts) > 1:
            raise HostDown(task.host, answer.error)
        return llm_failed(task, answer.error, retryable=answer.retryable, attempts=answer.attempts)

    async def analyse(self, task: LLMTask) -> InboxMessage:
        """An exchange's analysis: the model's JSON answer, validated; the heuristic's,
        with the reason, when the model gives none or one that is not an analysis."""
        backend = self._backends.get(task.backend)
        if backend is None:
            analysis, reason = heuristic_instead(
                task.messages, f"no {task.backend} backend to ask for the analysis"
            )
            return operator_message_analyzed(task, analysis, reason)
        answer = await backend.chat(task)
        if isinstance(answer, ChatReply):  # a model answered: its call is spend
            answer = priced(answer, task.price)
            analysis, fallback = analysis_from_answer(answer.message.content, task.messages)
            return operator_message_analyzed(task, analysis, fallback, answer.usage)
        if answer.host_down and len(task.hosts) > 1:
            raise HostDown(task.host, answer.error)  # another host of the pool is asked
        reason = f"no model answered after {answer.attempts} attempt(s): {answer.error}"
        analysis, reason = heuristic_instead(task.messages, reason)
        return operator_message_analyzed(task, analysis, reason)

    async def check(self, task: LLMTask) -> CheckOutcome:
        """The check's outcome, cut at the task's deadline whatever the backend does
        (the backends' own cuts, per host, come first: this is the backstop)."""
        allowed = seconds_left(task.deadline, margin=False)
        cut = asyncio.timeout(allowed)
        try:
            async with cut:
                if task.backend == "auto":
                    return await auto_backend.resolve(
                        task, self._backends["ollama"], self._backends["embedded"]
                    )
                return await self._backends[task.backend].check(task)
        except TimeoutError:
            if not cut.expired():
                raise
            where = f"the {task.backend} backend for model '{task.model}'"
            fix = "is the server running, and is its URL in the run config right?"
            return CheckOutcome(
                ok=False, backend=None, detail=did_not_answer(where, allowed or 0.0, fix)
            )

    async def aclose(self) -> None:
        for backend in self._backends.built():
            await backend.aclose()


def failure(
    task: LLMTask, error: str, *, retryable: bool = False, attempts: int = 1
) -> InboxMessage:
    """The answer of a task that got none, as its kind takes it: a failed check, the
    heuristic's analysis with the reason, a failed call."""
    if task.kind == "check":
        return model_checked(task, ok=False, backend=None, detail=error)
    if task.kind == "analysis":
        analysis, reason = heuristic_instead(task.messages, error)
        return operator_message_analyzed(task, analysis, reason)
    return llm_failed(task, error, retryable=retryable, attempts=attempts)


def analysis_refusal(task: LLMTask) -> str | None:
    """An analysis is dropped only past its deadline (the run has sent it again, or
    let the heuristic stand in); a stale answer is the core's to ignore."""
    if task.deadline is not None and datetime.now(UTC) > task.deadline:
        return f"{task.task_id} is past its deadline (the run has sent it again, or given up)"
    return None


def priced(reply: ChatReply, price: ModelPrice | None) -> ChatReply:
    """The reply with its cost: the provider's where the backend read one, else the
    price table's times the tokens, else left unknown (None, never zero)."""
    usage = reply.usage
    if usage.cost is not None or price is None:
        return reply
    cost = price.cost(usage.prompt_tokens, usage.completion_tokens)
    return replace(
        reply, usage=usage.model_copy(update={"cost": cost, "cost_source": "price_table"})
    )


def capped(reply: ChatReply, cap: int | None) -> ChatReply:
    """The reply with its text cut at ``cap`` characters (``limits.llm_content_chars``);
    ``done_reason`` says how long it was, so the record shows the cut."""
    content = reply.message.content
    if cap is None or len(content) <= cap:
        return reply
    note = f"content cut at {cap} of {len(content)} characters"
    reason = f"{reply.usage.done_reason} ({note})" if reply.usage.done_reason else note
    return ChatReply(
        message=reply.message.model_copy(update={"content": content[:cap]}),
        usage=reply.usage.model_copy(update={"done_reason": reason}),
        model=reply.model,
        tool_call_error=reply.tool_call_error,
    )


def build_backends(settings: LLMWorkerSettings) -> Backends:
    """Every backend, each built (its client library imported) at its first task."""
    retry = RetryPolicy(settings.max_attempts, settings.backoff_base_s, settings.backoff_max_s)
    checks = CheckSlots(settings.check_times)  # one queue per host, whichever backend asks

    def ollama() -> LLMBackend:
        from contreact_llm.backends.ollama import OllamaBackend

        return OllamaBackend(retry, checks)

    def openai() -> LLMBackend:
        from contreact_llm.backends.openai import OpenAIBackend

        return OpenAIBackend(retry, checks=checks)

    def embedded() -> LLMBackend:
        from contreact_llm.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(settings.gguf_path, default_n_ctx=settings.embedded_n_ctx)

    def scripted() -> LLMBackend:
        from contreact_llm.backends.scripted import ScriptedBackend

        return ScriptedBackend(retry)

    return Backends(
        {"ollama": ollama, "openai": openai, "embedded": embedded, "scripted": scripted}
    )


async def build_handler(redis: aioredis.Redis, settings: LLMWorkerSettings) -> LLMTaskHandler:
    return LLMTaskHandler(build_backends(settings), await Inbox.open(redis), TaskGate(redis))
