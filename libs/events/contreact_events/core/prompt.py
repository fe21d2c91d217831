"""ASSEMBLE_PROMPT and the tasks a state calls for. Pure.

The run log stores deltas; the messages of every LLM call are rebuilt from the
folded state: the system prompt (with the tools paragraph and the cycle's advisory)
followed by the whole message history.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from contreact_events.catalog.chat import ChatMessage
from contreact_events.config import RunConfig
from contreact_events.core.state import AgentState
from contreact_events.core.tools import MEMORY_TOOLS, SEARCH_TOOL
from contreact_events.diversity.corpus import scope_for
from contreact_events.wire.codec import dumps
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask


def system_message(state: AgentState) -> ChatMessage:
    text = state.system_prompt
    if state.advisory:
        text = f"{text}\n\n{state.advisory}"
    return ChatMessage(role="system", content=text)


def prompt_messages(state: AgentState) -> tuple[ChatMessage, ...]:
    """The messages an LLM call made in ``state`` sends. While an answer is asked for
    again, the repetition feedback stands where the rejected answer was (pinned:
    the new attempt's tool calls and results follow it), or, for runs recorded
    before that (version-1 ``RegenerationRequested``), after the newest message."""
    history = state.message_history
    if not state.regeneration_feedback:
        return (system_message(state), *history)
    feedback = ChatMessage(role="user", content=state.regeneration_feedback)
    at = len(history) if state.regeneration_at is None else state.regeneration_at
    return (system_message(state), *history[:at], feedback, *history[at:])


def offered_tools_now(state: AgentState) -> tuple[dict[str, Any], ...]:
    """The tool definitions the next LLM call offers: none for the final call at the
    step cap."""
    return () if state.final_call else state.tools


def prompt_sha256(state: AgentState) -> str:
    """SHA-256 of exactly what the next LLM call sends (its messages and tools),
    recorded in ``LLMRequested``; the same value as ``sha256_of_prompt`` over the
    call's messages, computed in time independent of the history's length."""
    history = state.message_history
    at = len(history)
    tail: tuple[ChatMessage, ...] = ()
    if state.regeneration_feedback:
        at = len(history) if state.regeneration_at is None else state.regeneration_at
        feedback = ChatMessage(role="user", content=state.regeneration_feedback)
        tail = (feedback, *history[at:])
    return _combine(offered_tools_now(state), system_message(state), _chain(history, at), tail)


def sha256_of_prompt(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> str:
    """The definition of the prompt hash, for a call's ``messages`` (the system message
    first) and ``tools``: SHA-256 over the SHA-256 of the tools' canonical JSON, the
    system message's digest, the chained digest of the messages after it, and nothing
    more. A message's digest is the SHA-256 of its canonical JSON (its Ollama form,
    keys sorted, ``codec.dumps``: orjson, or json for what orjson refuses, such as
    integers past 64 bits in the model's tool arguments); the chain starts at 32 zero
    bytes and each message makes it SHA-256(chain + digest)."""
    system, *rest = messages
    return _combine(tools, system, _fresh_chain(rest), ())


def _combine(
    tools: Sequence[dict[str, Any]],
    system: ChatMessage,
    chain: bytes,
    tail: Sequence[ChatMessage],
) -> str:
    for message in tail:
        chain = hashlib.sha256(chain + _digest(message)).digest()
    total = hashlib.sha256(hashlib.sha256(dumps(list(tools), sort_keys=True)).digest())
    total.update(_digest(system))
    total.update(chain)
    return total.hexdigest()


def _digest(message: ChatMessage) -> bytes:
    return hashlib.sha256(dumps(message.as_ollama(), sort_keys=True)).digest()


EMPTY_CHAIN = bytes(32)


def _fresh_chain(messages: Sequence[ChatMessage]) -> bytes:
    chain = EMPTY_CHAIN
    for message in messages:
        chain = hashlib.sha256(chain + _digest(message)).digest()
    return chain


_CHAINS: dict[int, bytes] = {}
"""id(message) -> the chain up to and including that history message, while it lives.

Valid because a history message object always has the same messages before it: the
fold only appends new objects, drops the newest, or replaces the newest by a new
object; it never inserts or reorders (the regeneration feedback is not in the
history, only in the prompt)."""


def _chain(history: Sequence[ChatMessage], end: int) -> bytes:
    """The chain over ``history[:end]``, reusing the chains of messages seen before:
    one call hashes only the messages that are new since the last."""
    start = end
    while start > 0 and id(history[start - 1]) not in _CHAINS:
        start -= 1
    chain = _CHAINS[id(history[start - 1])] if start > 0 else EMPTY_CHAIN
    for message in history[start:end]:
        chain = hashlib.sha256(chain + _digest(message)).digest()
        key = id(message)
        _CHAINS[key] = chain
        weakref.finalize(message, _CHAINS.pop, key, None)
    return chain


def waiting_deadline(state: AgentState) -> tuple[str, datetime] | None:
    """What the run waits on (a task id, or the operator call's) and when that wait
    ends (``RunConfig.deadlines``, ``operator.timeout_s``); None when it waits on
    nothing with a deadline."""
    config = state.config
    if config is None or state.terminal or state.pending_since is None:
        return None
    if state.pending_task_id is not None:
        seconds = _deadline_s(state, config)
        return state.pending_task_id, state.pending_since + timedelta(seconds=seconds)
    head = state.waiting_for
    timeout = config.operator.timeout_s
    if head is not None and head.reply is None and timeout is not None:
        return head.task_id, state.pending_since + timedelta(seconds=timeout)
    return None


def _deadline_s(state: AgentState, config: RunConfig) -> float:
    deadlines = config.deadlines
    match state.phase:
        case "checking":
            return deadlines.check_s
        case "awaiting_llm":
            return config.llm_deadline_s
        case "embedding" | "checking_paragraphs":
            return deadlines.embed_s
    head = state.tool_queue[0] if state.tool_queue else None
    return deadlines.embed_s if head and head.tool_name == SEARCH_TOOL else deadlines.memory_s


def pending_tasks(state: AgentState) -> list[LLMTask | MemoryTask | EmbedTask]:
    """Tasks the run waits on. After a crash the orchestrator sends these again;
    workers treat a repeat as the same task. Each carries its deadline and which
    send it is, so a worker can tell a stale copy."""
    waits = waiting_deadline(state)
    if waits is None or state.pending_task_id is None:
        return []
    deadline = waits[1]
    return [
        task.model_copy(update={"deadline": deadline, "send": state.task_sends})
        for task in _pending_tasks(state)
    ]


def _pending_tasks(state: AgentState) -> list[LLMTask | MemoryTask | EmbedTask]:
    config = state.config
    task_id = state.pending_task_id
    if config is None or state.terminal or task_id is None:
        return []
    if state.phase in ("checking", "awaiting_llm"):
        chat = state.phase == "awaiting_llm"
        backend = (state.backend or config.backend) if chat else config.backend
        hosts = config.llm_hosts(backend)
        client = config.openai_client_config if backend == "openai" else None
        return [
            LLMTask(
                kind="chat" if chat else "check",
                task_id=task_id,
                run_id=state.run_id,
                backend=backend,
                model=config.model_name,
                host=hosts[0],
                hosts=hosts,
                api_key_env=client.api_key_env if client else None,
                timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
                connect_timeout_s=config.ollama_client_config.connect_timeout_s,
                messages=prompt_messages(state) if chat else (),
                tools=offered_tools_now(state) if chat else (),
                options=config.model_options.as_options(),
                keep_alive=config.keep_alive,
                call_index=max(state.llm_calls - 1, 0),
                cycle=state.cycle_number,
                step=state.step,
                script=config.script,
                max_content_chars=config.limits.llm_content_chars,
            )
        ]
    if state.phase == "checking_paragraphs":
        diversity = config.diversity
        attempt = len(state.attempts) + 1
        return [
            EmbedTask(
                kind="paragraphs",
                task_id=task_id,
                run_id=state.run_id,
                cycle=state.cycle_number,
                text=state.last_response.content if state.last_response else "",
                model=diversity.embedding_model,
                attempt=attempt,
                scope=scope_for(config, state.run_id),
                experiment=config.experiment if diversity.corpus_scope == "experiment" else None,
                threshold=diversity.paragraph_threshold,
                min_length=diversity.paragraph_min_length,
                extra_patterns=diversity.natural_repetition_patterns,
                attempts_remaining=diversity.max_attempts - attempt,
            )
        ]
    if state.phase == "embedding":
        return [
            EmbedTask(
                task_id=task_id,
                run_id=state.run_id,
                cycle=state.cycle_number,
                text=state.reflection_history[-1],
                model=config.diversity.embedding_model,
            )
        ]
    head = state.tool_queue[0] if state.tool_queue else None
    if state.phase != "tools" or head is None or head.task_id != task_id:
        return []
    if head.tool_name == SEARCH_TOOL:
        return [
            EmbedTask(
                kind="search",
                task_id=task_id,
                run_id=state.run_id,
                cycle=state.cycle_number,
                text=head.arguments["query"],
                model=config.diversity.embedding_model,
                k=head.arguments.get("k", config.tools.search_k),
            )
        ]
    if head.tool_name in MEMORY_TOOLS:
        return [
            MemoryTask(
                task_id=task_id,
                run_id=state.run_id,
                tool=head.tool_name,
                arguments=head.arguments,
                ts=head.requested_at,
            )
        ]
    return []
