"""A pure, in-process driver of the core for tests and benchmarks: it plays the
workers' part (answers each task the way the services would) without Redis."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage, ToolCall
from contreact_events.config import RunConfig, parse_run_config
from contreact_events.core.decide import Decision, Task, decide
from contreact_events.core.state import AgentState
from contreact_events.diversity.corpus import accepted_chunks, check_answer
from contreact_events.diversity.paragraphs import split_paragraphs
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.protocol import paper_system_prompt
from contreact_events.wire.tasks import EmbedTask, InboxMessage, LLMTask, MemoryTask

T0 = datetime(2026, 1, 1, tzinfo=UTC)

Reply = AssistantMessage | Callable[[LLMTask], AssistantMessage]


def make_config(**overrides: Any) -> RunConfig:
    data: dict[str, Any] = {
        "run_id": "run-1",
        "model_name": "test-model",
        "cycle_count": 2,
        "backend": "scripted",
        "script": {"replies": [{"content": "x"}]},
        "system_prompt": paper_system_prompt(),
        "diversity": {"enabled": False},
    }
    data.update(overrides)
    return parse_run_config(data)


def say(content: str = "", *calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        content=content, tool_calls=tuple(ToolCall(name=n, arguments=a) for n, a in calls)
    )


class Sim:
    """Feeds inputs to ``decide`` and keeps the log, like the orchestrator does."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.state = AgentState(run_id=config.run_id)
        self.log: list[Event] = []
        self.tasks: list[Task] = []
        self.analyses: dict[str, LLMTask] = {}
        """Analysis tasks sent and not answered yet (they do not hold the cycle)."""
        self.memory: dict[str, str] = {}
        self._clock = 0
        self._ids = 0

    def send(self, kind: str, causation: str | None = None, **data: Any) -> Decision:
        self._ids += 1
        self._clock += 1
        message = InboxMessage(
            msg_id=f"m{self._ids}",
            run_id=self.config.run_id,
            kind=kind,
            causation_id=causation,
            data=data,
        )
        before = self.state
        decision = decide(self.state, message.to_event(T0 + timedelta(seconds=self._clock)))
        if decision.accepted:
            self.state = decision.state
            self.log.extend(decision.events)
            gating = [t for t in decision.tasks if not _analysis(t)]
            task_id = getattr(decision.events[0], "task_id", None)
            control = kind in ("SettingsChanged", "RunPaused", "RunResumed")  # the wait goes on
            if gating or (before.open_task(task_id) is None and not control):
                self.tasks = gating
            self.analyses.update({t.task_id: t for t in decision.tasks if _analysis(t)})  # type: ignore[misc]
            if self.state.terminal:
                self.analyses.clear()
        return decision

    def answer_analysis(self, task_id: str, raw: str, **usage: Any) -> Decision:
        """The LLM worker's answer to an analysis task whose model answered ``raw``
        (with ``usage``, the call's tokens and cost, when given)."""
        from contreact_events.core.exchange_prompt import analysis_from_answer

        task = self.analyses.pop(task_id)
        analysis, reason = analysis_from_answer(raw, task.messages)
        return self.send(
            "OperatorMessageAnalyzed",
            task_id,
            task_id=task_id,
            analysis=analysis.model_dump(mode="json"),
            fallback_reason=reason,
            usage=usage or None,
        )

    def start(self) -> Decision:
        self.send("RunRequested", config=self.config.model_dump(mode="json"))
        check = self.task()
        return self.send(
            "ModelChecked", check.task_id, ok=True, backend="scripted", model=self.config.model_name
        )

    def task(self) -> Task:
        assert len(self.tasks) == 1, f"expected one task, have {self.tasks}"
        return self.tasks[0]

    def answer_llm(self, message: AssistantMessage, **usage: Any) -> Decision:
        task = self.task()
        assert isinstance(task, LLMTask) and task.kind == "chat", task
        return self.send(
            "LLMResponded",
            task.task_id,
            message=message.model_dump(mode="json"),
            usage=usage,
            model=self.config.model_name,
        )

    def answer_memory(self) -> Decision:
        task = self.task()
        assert isinstance(task, MemoryTask), task
        from contreact_events.cognition.policy import reserved_key_problem

        key = str(task.arguments.get("key", ""))
        refused = task.reserved_prefix is not None and reserved_key_problem(task.tool, key)
        output = refused or apply_memory(self.memory, task.tool, task.arguments)
        if task.tool == "persist":
            return self.send(
                "PersistentMemoryStored",
                task.task_id,
                task_id=task.task_id,
                key=task.arguments["key"],
                output=output,
                ok=True,
            )
        return self.send(
            "ToolCallCompleted",
            task.task_id,
            task_id=task.task_id,
            tool_name=task.tool,
            output=output,
            ok=not output.startswith("Error"),
        )

    def answer_embedding(self) -> Decision:
        task = self.task()
        assert isinstance(task, EmbedTask), task
        if task.kind == "paragraphs":
            return self.answer_paragraphs()
        if task.kind == "memories":
            return self.answer_retrieval()
        return self.send(
            "ReflectionEmbedded",
            task.task_id,
            task_id=task.task_id,
            cycle=task.cycle,
            vector=toy_embedding(task.text),
            model="toy",
        )

    def answer_retrieval(self) -> Decision:
        """A cycle's memory retrieval (``cognition.memory_block``) as the embedder does
        it, with toy vectors: the run's memory projected from the log, ranked by
        ``cognition.retrieval.rank`` at the request's time."""
        from contreact_events.catalog.cognition import MEMORY_BLOCK_PREVIEW
        from contreact_events.cognition.retrieval import Candidate, rank
        from contreact_events.diversity.memory_projection import MemoryProjection

        task = self.task()
        assert isinstance(task, EmbedTask) and task.kind == "memories", task
        projection = MemoryProjection()
        projection.feed(self.log)
        candidates = [
            Candidate(key, value, projection.written_at[key], toy_embedding(value))
            for key, value in projection.values.items()
        ]
        now = projection.searched_at[task.task_id]
        ranked = rank(task.text, toy_embedding(task.text), candidates, now=now, k=task.k)
        memories = [
            {
                "key": hit.id,
                "value": hit.text[:MEMORY_BLOCK_PREVIEW],
                "written_at": projection.written_at[hit.id].isoformat(),
                "combined": hit.combined,
                "cosine": hit.cosine,
                "keyword": hit.keyword,
                "recency": hit.recency,
            }
            for hit in ranked
        ]
        return self.send(
            "MemoriesRetrieved",
            task.task_id,
            task_id=task.task_id,
            cycle=task.cycle,
            memories=memories,
        )

    def answer_paragraphs(self) -> Decision:
        """Seed 001's check as the embedder does it, with toy vectors: the corpus is
        the projection of the log's accepted paragraphs."""
        task = self.task()
        assert isinstance(task, EmbedTask) and task.kind == "paragraphs", task
        paragraphs = split_paragraphs(task.text, task.min_length)
        vectors = [toy_embedding(p) for p in paragraphs]
        index = VectorIndex()
        for chunk in accepted_chunks(self.log):
            if chunk.scope == task.scope:
                index.add(chunk.chunk_id, chunk.vector, scope=chunk.scope, text=chunk.text)
        message = check_answer(task, paragraphs, vectors, index)
        return self.send(message.kind, message.causation_id, **message.data)

    def drive(self, replies: Sequence[Reply], *, max_inputs: int = 100_000) -> AgentState:
        """Answer every task until the run waits on something else or ends; LLM tasks
        take the next reply (cycling)."""
        if self.state.phase == "new":
            self.start()
        index = 0
        for _ in range(max_inputs):
            if self.state.terminal or not self.tasks:
                return self.state
            task = self.tasks[0]
            if isinstance(task, MemoryTask):
                self.answer_memory()
                continue
            if isinstance(task, EmbedTask):
                self.answer_embedding()
                continue
            reply = replies[index % len(replies)]
            index += 1
            self.answer_llm(
                reply(task) if callable(reply) else reply,
                prompt_tokens=10,
                completion_tokens=5,
                wall_s=0.5,
            )
        raise AssertionError("the run did not settle")


def _analysis(task: Task) -> bool:
    return isinstance(task, LLMTask) and task.kind == "analysis"


def apply_memory(memory: dict[str, str], tool: str, args: dict[str, Any]) -> str:
    match tool:
        case "persist":
            memory[args["key"]] = args["value"]
            return f"Kept under key '{args['key']}'."
        case "write":
            memory[args["key"]] = args["value"]
            return f"Stored {args['key']}."
        case "read":
            return memory.get(args["key"], f"Error: no memory under key {args['key']}.")
        case "list":
            return ", ".join(sorted(memory)) or "Memory is empty."
        case "delete":
            return "Deleted." if memory.pop(args["key"], None) is not None else "Error: no key."
        case "pattern_search":
            return ", ".join(k for k in sorted(memory) if args["pattern"] in k) or "No keys."
    raise AssertionError(tool)


def toy_embedding(text: str, dim: int = 16) -> list[float]:
    """A deterministic stand-in for the embedder in pure tests: word counts hashed
    into ``dim`` buckets, normalized. Same words, same vector; other words, another.
    (The real model is tested in the embedder's own tests and end to end.)"""
    vector = [0.0] * dim
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
