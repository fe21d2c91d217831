"""The outbox: the tasks a state calls for, and how long the run waits on them. Pure.

The run log is the outbox: the orchestrator appends a decision's events, then sends
the tasks the new state calls for (``pending_tasks``). After a crash a new owner sends
again whichever of them is nowhere to be found; workers treat a repeat as the same
task. ``memory_calls`` derives the memory calls that were executed from the same rule.

Tasks that do not hold the cycle (issue 17). The cycle waits on one task at a time
(``pending_task_id``, ``pending_since``, ``task_sends``, ``task_failure``); beside it
``AgentState.open_tasks`` holds tasks whose answers the run takes whenever they come:
today a model's analysis of an operator exchange (``cognition.analysis: model``). An
``OpenTask`` keeps what its task is built from, when it was last sent (``since``), its
send and a failure not acted on yet.

- Opened by ``OperatorMessageAnalysisRequested``, derived as an exchange completes;
  with ``analysis: heuristic`` no task is opened (the core derives the analysis).
- Answered by ``OperatorMessageAnalyzed``: ``rejection`` routes it by causation id to an
  open task before any phase check, so it is accepted in any phase; a duplicate or an
  answer for no open task is ignored with the reason.
- Failed (``TaskFailed`` checked against the open task's send): sent again within
  ``deadlines.retries``, then the heuristic stands in with ``fallback_reason``. Every
  open task has a deadline (``cognition.deadline_s`` from ``since``, ``open_deadlines``)
  that the orchestrator's ``DeadlineWatch`` reports beside the cycle's own.
- The end: at the last cycle the run rests while tasks are open and ``RunCompleted``
  follows the last answer (the fold refuses a ``RunCompleted`` with open tasks);
  ``RunFailed`` and ``RunCancelled`` drop them; later answers are ignored.
- Sending: ``pending_tasks`` lists the cycle's task, then the open ones (an ``LLMTask``
  of kind ``analysis`` each, with ``json_schema``). ``decide`` sends an open task when
  (id, send, deadline) is new to the decision's state: opened, retried, or taken over
  by a fork (``RunForked`` sends the prefix's open analyses again under the child's ids).
- An analysis waits in a background line of its model, so the run's own calls go
  first; with ``cognition.memory_policy`` the next call waits for it
  (``LLMTask.holds_cycle``) and it goes to the run's line. The writer hash records only
  the cycle's task: the LLM worker drops an analysis only past its deadline.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from contreact_events.cognition.model_answer import analysis_json_schema
from contreact_events.cognition.policy import PERSISTENT_PREFIX, POLICY_TOOL
from contreact_events.config import RunConfig
from contreact_events.core.compaction import compaction_messages
from contreact_events.core.exchange_prompt import analysis_messages
from contreact_events.core.prompt import offered_tools_now, prompt_messages, retrieval_query
from contreact_events.core.state import AgentState
from contreact_events.core.tools import MEMORY_TOOLS, SEARCH_TOOL, SEED_TOOL
from contreact_events.diversity.corpus import scope_for
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask


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
        case "awaiting_llm" | "compacting":
            return config.llm_deadline_s(state.backend)
        case "embedding" | "checking_paragraphs":
            return deadlines.embed_s
        case "seeding":
            return deadlines.memory_s
        case "retrieving":
            return deadlines.embed_s
    head = state.tool_queue[0] if state.tool_queue else None
    return deadlines.embed_s if head and head.tool_name == SEARCH_TOOL else deadlines.memory_s


def open_deadlines(state: AgentState) -> list[tuple[str, int, datetime]]:
    """The open tasks (that do not hold the cycle): id, send, and when the wait ends."""
    if state.config is None or state.terminal:
        return []
    seconds = timedelta(seconds=state.config.cognition.deadline_s)
    return [(t.task_id, t.sends, t.since + seconds) for t in state.open_tasks]


def pending_tasks(state: AgentState) -> list[LLMTask | MemoryTask | EmbedTask]:
    """Tasks the run waits on: the cycle's, then the open ones. After a crash the
    orchestrator sends these again; workers treat a repeat as the same task. Each
    carries its deadline and which send it is, so a worker can tell a stale copy."""
    tasks: list[LLMTask | MemoryTask | EmbedTask] = []
    waits = waiting_deadline(state)
    if waits is not None and state.pending_task_id is not None:
        deadline = waits[1]
        tasks = [
            task.model_copy(update={"deadline": deadline, "send": state.task_sends})
            for task in _pending_tasks(state)
        ]
    if state.open_tasks:
        tasks.extend(analysis_tasks(state))
    return tasks


def analysis_tasks(state: AgentState) -> list[LLMTask]:
    """The open analyses as LLM tasks: one structured-JSON call each."""
    config = state.config
    if config is None or state.terminal:
        return []
    backend = state.backend or config.backend
    hosts = config.llm_hosts(backend)
    client = config.openai_client_config if backend == "openai" else None
    cognition = config.cognition
    tasks = []
    waits = open_deadlines(state)
    model = cognition.model or config.model_name
    for (task_id, send, deadline), task in zip(waits, state.open_tasks, strict=True):
        tasks.append(
            LLMTask(
                kind="analysis",
                task_id=task_id,
                run_id=state.run_id,
                backend=backend,
                model=model,
                host=hosts[0],
                hosts=hosts,
                api_key_env=client.api_key_env if client else None,
                timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
                connect_timeout_s=(
                    client.connect_timeout_s
                    if client
                    else config.ollama_client_config.connect_timeout_s
                ),
                messages=analysis_messages(task.exchange, task.recent, task.memories),
                options={"temperature": cognition.temperature},
                keep_alive=config.keep_alive,
                cycle=task.cycle,
                script=config.script,
                json_schema=analysis_json_schema(),
                holds_cycle=cognition.memory_policy,
                deadline=deadline,
                send=send,
                price=config.price_of(model),
            )
        )
    return tasks


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
                connect_timeout_s=(
                    client.connect_timeout_s
                    if client
                    else config.ollama_client_config.connect_timeout_s
                ),
                messages=prompt_messages(state) if chat else (),
                tools=offered_tools_now(state) if chat else (),
                options=config.model_options.as_options(),
                keep_alive=config.keep_alive,
                call_index=max(state.llm_calls - 1, 0),
                cycle=state.cycle_number,
                step=state.step,
                script=config.script,
                max_content_chars=config.limits.llm_content_chars,
                price=config.price if chat else None,
            )
        ]
    if state.phase == "compacting":
        backend = state.backend or config.backend
        hosts = config.llm_hosts(backend)
        client = config.openai_client_config if backend == "openai" else None
        return [
            LLMTask(
                kind="chat",
                task_id=task_id,
                run_id=state.run_id,
                backend=backend,
                model=config.history.model or config.model_name,
                host=hosts[0],
                hosts=hosts,
                api_key_env=client.api_key_env if client else None,
                timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
                connect_timeout_s=(
                    client.connect_timeout_s
                    if client
                    else config.ollama_client_config.connect_timeout_s
                ),
                messages=compaction_messages(state, config),
                options=config.model_options.as_options(),
                keep_alive=config.keep_alive,
                call_index=state.llm_calls,
                cycle=state.cycle_number + 1,
                script=config.script,
                max_content_chars=config.limits.llm_content_chars,
            )
        ]
    if state.phase == "seeding":
        return [
            MemoryTask(
                task_id=task_id,
                run_id=state.run_id,
                tool=SEED_TOOL,
                arguments={"events": state.fork_prefix},
                ts=state.pending_since or datetime.min,
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
    if state.phase == "retrieving":
        return [
            EmbedTask(
                kind="memories",
                task_id=task_id,
                run_id=state.run_id,
                cycle=state.cycle_number + 1,
                text=retrieval_query(state),
                model=config.diversity.embedding_model,
                k=config.cognition.memory_block_k,
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
    if state.phase == "tools" and head is not None and head.kept is not None:
        kept = head.kept
        if kept.task_id == task_id and not kept.stored:
            return [
                MemoryTask(
                    task_id=task_id,
                    run_id=state.run_id,
                    tool=POLICY_TOOL,
                    arguments={"key": kept.key, "value": kept.value},
                    ts=kept.requested_at,
                    reserved_prefix=PERSISTENT_PREFIX,
                )
            ]
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
                reserved_prefix=PERSISTENT_PREFIX if config.cognition.memory_policy else None,
            )
        ]
    return []
