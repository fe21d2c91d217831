"""ASSEMBLE_PROMPT, pure: the messages and tools of a state's next LLM call, and their hash.

The run log stores deltas; the messages of every LLM call are rebuilt from the
folded state: the system prompt (with the tools paragraph and the cycle's advisory)
followed by the message history (the whole of it, or the part ``history`` keeps:
``core.compaction.window``).

``prompt_sha256`` is the SHA-256 of the canonical JSON of exactly the messages and
tools a call sends, recorded in ``LLMRequested``: ``replay --check`` therefore also
catches a change in how prompts are assembled, which the logged deltas alone would not
show (logs of version 1 recorded none; replay compares it only where recorded).
``RunStarted.prompt_hashes`` holds the hash of every text the platform puts into prompts
(the system prompt as given and with the tools paragraph, the tools paragraph, the cycle
opening, the automatic operator reply, both advisories, the regeneration request, the
final-call note).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from typing import Any

from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cognition import RetrievedMemory
from contreact_events.core.compaction import window
from contreact_events.core.state import AgentState
from contreact_events.wire.codec import dumps


def system_message(state: AgentState) -> ChatMessage:
    text = state.system_prompt
    if state.advisory:
        text = f"{text}\n\n{state.advisory}"
    if state.memory_block:
        text = f"{text}\n\n{memory_block_text(state.memory_block)}"
    return ChatMessage(role="system", content=text)


MEMORY_BLOCK_HEADING = (
    "Relevant memories (retrieved for this cycle from your memory by the platform, "
    "best first; read a key for its whole value):"
)


def memory_block_text(memories: Sequence[RetrievedMemory]) -> str:
    """``cognition.memory_block``: the cycle's retrieved memories as the system prompt
    shows them, built from the logged ``MemoriesRetrieved`` alone."""
    lines = [MEMORY_BLOCK_HEADING]
    for memory in memories:
        lines.append(f"- {memory.key!r}: {memory.value}")
    return "\n".join(lines)


def retrieval_query(state: AgentState) -> str:
    """What the next cycle's memories are ranked against: the last reflection, or the
    first cycle's opening message when there is none yet."""
    if state.reflection_history:
        return state.reflection_history[-1]
    opening = state.config.cycle_start_message if state.config else ""
    return opening.replace("{cycle}", str(state.cycle_number + 1))


def prompt_messages(state: AgentState) -> tuple[ChatMessage, ...]:
    """The messages an LLM call made in ``state`` sends. While an answer is asked for
    again, the repetition feedback stands where the rejected answer was (pinned:
    the new attempt's tool calls and results follow it), or, for runs recorded
    before that (version-1 ``RegenerationRequested``), after the newest message."""
    lead, start = window(state)  # ``history``: the part the prompts carry
    history = state.message_history[start:]
    if not state.regeneration_feedback:
        return (system_message(state), *lead, *history)
    feedback = ChatMessage(role="user", content=state.regeneration_feedback)
    at = len(state.message_history) if state.regeneration_at is None else state.regeneration_at
    at = max(at - start, 0)
    return (system_message(state), *lead, *history[:at], feedback, *history[at:])


def offered_tools_now(state: AgentState) -> tuple[dict[str, Any], ...]:
    """The tool definitions the next LLM call offers: none for the final call at the
    step cap."""
    return () if state.final_call else state.tools


def prompt_sha256(state: AgentState) -> str:
    """SHA-256 of exactly what the next LLM call sends (its messages and tools),
    recorded in ``LLMRequested``; the same value as ``sha256_of_prompt`` over the
    call's messages, computed in time independent of the history's length."""
    if state.config is not None and state.config.history.policy != "none":
        # a window or a summary: hashed whole (a bounded number of messages)
        return sha256_of_prompt(prompt_messages(state), offered_tools_now(state))
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
