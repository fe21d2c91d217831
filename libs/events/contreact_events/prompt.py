"""ASSEMBLE_PROMPT and the tasks a state calls for. Pure.

The run log stores deltas; the messages of every LLM call are rebuilt from the
folded state: the system prompt (with the tools paragraph and the cycle's advisory)
followed by the whole message history.
"""

from __future__ import annotations

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
    """The messages an LLM call made in ``state`` sends; while an answer is asked for
    again, the repetition feedback comes last, before the model's turn."""
    messages = (system_message(state), *state.message_history)
    if state.regeneration_feedback:
        messages = (*messages, ChatMessage(role="user", content=state.regeneration_feedback))
    return messages


def pending_tasks(state: AgentState) -> list[LLMTask | MemoryTask | EmbedTask]:
    """Tasks the run waits on. After a crash the orchestrator sends these again;
    workers treat a repeat as the same task."""
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
                messages=prompt_messages(state) if chat else (),
                tools=state.tools if chat else (),
                options=config.model_options.as_options(),
                keep_alive=config.keep_alive,
                call_index=max(state.llm_calls - 1, 0),
                cycle=state.cycle_number,
                step=state.step,
                script=config.script,
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
