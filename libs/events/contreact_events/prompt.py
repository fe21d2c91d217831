"""ASSEMBLE_PROMPT and the tasks a state calls for. Pure.

The run log stores deltas; the messages of every LLM call are rebuilt from the
folded state: the system prompt (with the tools paragraph and the cycle's advisory)
followed by the whole message history.
"""

from __future__ import annotations

import hashlib
from typing import Any

from contreact_events.codec import dumps
from contreact_events.corpus import scope_for
from contreact_events.messages import ChatMessage
from contreact_events.state import AgentState
from contreact_events.tasks import EmbedTask, LLMTask, MemoryTask
from contreact_events.tools import MEMORY_TOOLS, SEARCH_TOOL


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
    """SHA-256 of exactly what the next LLM call sends as messages and tools
    (canonical JSON), recorded in ``LLMRequested``."""
    payload = {
        "messages": [m.as_ollama() for m in prompt_messages(state)],
        "tools": list(offered_tools_now(state)),
    }
    # codec.dumps: orjson, or json for what orjson refuses (integers past 64 bits,
    # lone surrogates in the model's tool arguments): a prompt never stops a run.
    return hashlib.sha256(dumps(payload, sort_keys=True)).hexdigest()


def pending_tasks(state: AgentState) -> list[LLMTask | MemoryTask | EmbedTask]:
    """Tasks the run waits on. After a crash the orchestrator sends these again;
    workers treat a repeat as the same task."""
    config = state.config
    task_id = state.pending_task_id
    if config is None or state.terminal or task_id is None:
        return []
    if state.phase in ("checking", "awaiting_llm"):
        chat = state.phase == "awaiting_llm"
        return [
            LLMTask(
                kind="chat" if chat else "check",
                task_id=task_id,
                run_id=state.run_id,
                backend=(state.backend or config.backend) if chat else config.backend,
                model=config.model_name,
                host=config.ollama_client_config.host,
                timeout_s=config.ollama_client_config.timeout_s,
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
