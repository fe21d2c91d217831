"""AgentState: everything known about a run, rebuilt by folding its log."""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from contreact_events.catalog.chat import AssistantMessage, ChatMessage
from contreact_events.catalog.cognition import RetrievedMemory
from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.catalog.exchange import Analysis, Exchange
from contreact_events.config import ResolvedBackend, RunConfig

RunStatus = Literal[
    "new",
    "checking",
    "running",
    "waiting_operator",
    "completed",
    "failed",
    "cancelled",
    "stopped",
]
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "stopped"})
RESTING_STATUSES = frozenset({"paused", "stepping"})
"""What the listings show (``AgentState.listed_status``) of a running run that a
researcher paused (``contreact pause``) or steps (``contreact run --step``, ``pause
--step``): live, not ended; the folded ``status`` stays ``running``."""

Phase = Literal[
    "new",  # nothing folded yet
    "seeding",  # a fork: the memory service replays the prefix's memory calls
    "checking",  # the LLM worker is checking backend and model
    "starting",  # the check passed: RunStarted comes next
    "cycle_start",  # CycleStarted comes next
    "retrieving",  # cognition.memory_block: waiting for the cycle's memories
    "calling",  # LLMRequested comes next
    "awaiting_llm",  # waiting for LLMResponded / LLMFailed
    "responded",  # an answer arrived: tool calls or the reflection come next
    "tools",  # working through the tool calls of the last answer
    "checking_paragraphs",  # regenerate mode: waiting for the paragraph check
    "paragraphs_checked",  # accept the attempt, or ask again, comes next
    "reflected",  # the reflection is recorded: embedding or CycleEnded comes next
    "embedding",  # waiting for the embedder
    "assessing",  # the vector arrived: SimilarityAssessed comes next
    "closing",  # CycleEnded comes next
    "compacting",  # history: compact: waiting for the summary of the older part
    "cycle_end",  # the next cycle or RunCompleted comes next
    "failing",  # RunFailed comes next
    "done",  # terminal
]


class KeptExchange(BaseModel):
    """The memory policy's store of one exchange (``PersistentMemoryRequested``): a
    memory task the cycle waits on until ``stored``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    key: str
    value: str
    requested_at: datetime
    stored: bool = False


class QueuedToolCall(BaseModel):
    """A requested tool call that has not completed yet (the head is in progress)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    cycle: int
    step: int
    index: int
    tool_name: str
    arguments: dict[str, Any]
    requested_at: datetime
    problem: str | None = None
    """Why the call cannot run (unknown tool, bad arguments), worded for the model."""
    message_sent: bool = False
    reply: str | None = None
    replied_by: Literal["operator", "policy", "timeout"] | None = None
    """Who gave ``reply`` (``timeout``: nobody answered in time; the automatic reply)."""
    analysed: bool = False
    """An operator call: its exchange's analysis was asked for (``cognition.analysis``)."""
    analysis: Analysis | None = None
    """With ``cognition.memory_policy``: the exchange's analysis, once it arrived."""
    kept: KeptExchange | None = None
    """With ``cognition.memory_policy``: the exchange's store under the reserved prefix."""


class Attempt(BaseModel):
    """One answer of the current cycle checked by the paragraph repetition guard."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt: int
    text: str
    similarity: float
    is_unique: bool
    feedback: str = ""
    checked: bool = True
    """False when the embedder could not check it (accepted unchecked)."""


class OpenTask(BaseModel):
    """A task that does not hold the cycle (an exchange's analysis): its answer is
    accepted whenever it arrives; ``RunCompleted`` waits until none is open."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    kind: Literal["analysis"] = "analysis"
    cycle: int
    exchange: Exchange
    recent: tuple[Exchange, ...] = ()
    memories: tuple[RetrievedMemory, ...] = ()
    """The cycle's retrieved memories (``cognition.memory_block``) the model is given."""
    since: datetime
    """When it was last sent: its deadline counts from here."""
    sends: int = 1
    failure: str | None = None
    """A failure the run has yet to act on (send it again, or let the heuristic stand in)."""


class AgentState(BaseModel):
    """Seed 003's AgentState (run_id, cycle_number, model_name, message_history,
    reflection_history) and what the state machine needs besides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    status: RunStatus = "new"
    phase: Phase = "new"
    seq: int = 0
    """Number of events folded."""
    last_event_id: str | None = None
    config: RunConfig | None = None
    backend: ResolvedBackend | None = None
    model_digest: str | None = None
    resolved_model: str = ""
    """The model that answers (the embedded GGUF's name when ``auto`` fell back to it)."""
    host: str = ""
    """The host that answered the run's last call (``LLMResponded.host``; a model's pool
    may move a run to another host when its host goes down)."""
    system_prompt: str = ""
    tools: tuple[dict[str, Any], ...] = ()
    cycle_number: int = 0
    step: int = 0
    """LLM calls made in the current cycle."""
    llm_calls: int = 0
    """LLM calls made in the whole run."""
    message_history: tuple[ChatMessage, ...] = ()
    reflection_history: tuple[str, ...] = ()
    advisory: str | None = None
    """The diversity advisory in force in the current cycle."""
    next_advisory: str | None = None
    """The advisory the last similarity assessment gave the next cycle."""
    embeddings: tuple[tuple[int, tuple[float, ...]], ...] = ()
    """(cycle, vector) of every embedded reflection, in order."""
    attempts: tuple[Attempt, ...] = ()
    """The current cycle's answers checked for repetition (regenerate mode)."""
    regeneration_feedback: str | None = None
    """While an answer is asked for again: the feedback put before the model's turn."""
    regeneration_at: int | None = None
    """Where in ``message_history`` the feedback stands (pinned, seed 001); None: after
    the newest message (how version-1 ``RegenerationRequested`` placed it)."""
    final_call: bool = False
    """The step cap was reached: the model is called once more, without tools."""
    reflection_complete: bool = True
    """False when the current cycle's reflection was cut by the step limit."""
    pending_task_id: str | None = None
    """The task the run waits on (model check, completion or memory tool), if any."""
    pending_since: datetime | None = None
    """When the pending task was last sent (or the operator was asked): its deadline
    counts from here."""
    task_sends: int = 0
    """How many times the pending task has been sent (1, then 2 after a retry...)."""
    task_failure: str | None = None
    """A failure of the pending task that the run has yet to act on (retry or fail)."""
    last_response: AssistantMessage | None = None
    tool_queue: tuple[QueuedToolCall, ...] = ()
    metrics: CycleMetrics = CycleMetrics()
    """Metrics of the cycle in progress."""
    cycle_metrics: tuple[CycleMetrics, ...] = ()
    failure_reason: str | None = None
    code_version: str = ""
    open_tasks: tuple[OpenTask, ...] = ()
    """Tasks that do not hold the cycle, in the order they were opened."""
    exchanges: tuple[Exchange, ...] = ()
    """The run's operator exchanges that were analysed (or are being), in order."""
    analyses: int = 0
    """``OperatorMessageAnalyzed`` events folded."""
    memory_block: tuple[RetrievedMemory, ...] = ()
    """``cognition.memory_block``: the memories the current cycle's prompt shows."""
    retrieved_for: int = 0
    """The cycle the last memory retrieval was for (0: none yet)."""
    fork_prefix: int = 0
    """A fork: how many events its log copied from the parent (0: not a fork)."""
    summary: str | None = None
    """``history: compact``: the summary that stands for ``message_history[:summary_upto]``
    in the prompts (None: no compaction yet)."""
    summary_upto: int = 0
    compaction_upto: int = 0
    """The part a pending compaction summarises (``HistoryCompactionRequested.upto``)."""
    compactions: int = 0
    compacting_from: Phase = "cycle_end"
    """Where the run goes on once the summary is in."""
    last_prompt_tokens: int = 0
    """The prompt tokens the backend reported for the run's last call."""
    paused: bool = False
    """``contreact pause``: the run rests before its next model call or cycle."""
    stepping: bool = False
    """``contreact run --step``: the run rests at every model call until a step."""
    step_grants: int = 0
    """Model calls a stepping run may still make (``contreact step`` adds one)."""
    researcher_question: str = ""
    """A fork's researcher question (``RunForked.question``, ``contreact ask``) until
    the next cycle opens with it; empty: none waits."""
    tool_uses: tuple[tuple[str, int], ...] = ()
    """Per tool added as data (``tools.added``): how many of its calls ran, in the order
    the tools were first called; the next call's index (``core.data_tools``)."""
    started_at: datetime | None = None
    """When the run (a fork: the fork itself) started: its wall-time budget counts
    from here."""
    spent_tokens: int = 0
    """Prompt plus completion tokens of the run's own LLM calls (a fork's: since it
    started; its copied prefix is its parent's spend)."""
    spent_cost: float = 0.0
    """The summed cost of those calls whose cost is known."""
    uncosted_calls: int = 0
    """Those calls whose cost is unknown: ``spent_cost`` is then a lower bound."""
    stop_reason: str | None = None
    """``RunStopped``: which budget limit ended the run."""

    @property
    def model_name(self) -> str:
        return self.config.model_name if self.config else ""

    def open_task(self, task_id: str | None) -> OpenTask | None:
        return next((t for t in self.open_tasks if t.task_id == task_id), None)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def listed_status(self) -> str:
        """The status every listing shows (``contreact runs``, ``experiment status``,
        the live table, the dashboard): ``status``, except that a running run paused or
        stepping says ``paused`` or ``stepping``. A run waiting for the operator's reply
        says ``waiting_operator`` even when paused: the reply is needed first (it rests
        once it has it)."""
        if self.status == "running" and self.paused:
            return "paused"
        if self.status == "running" and self.stepping:
            return "stepping"
        return self.status

    @property
    def waiting_for(self) -> QueuedToolCall | None:
        """The operator call the run is waiting on, if it waits for a person."""
        head = self.tool_queue[0] if self.tool_queue else None
        if self.status == "waiting_operator" and head is not None:
            return head
        return None

    @classmethod
    def shape(cls) -> str:
        """SHA-256 (first 16 hex digits) of the state's JSON schema: two digests can be
        compared only when they were made by code whose states have the same shape (a
        field added anywhere in the state changes every digest)."""
        return _shape(cls)

    def digest(self) -> str:
        """SHA-256 of the state's canonical JSON: equal digests, equal states (of one
        ``shape``)."""
        from contreact_events.wire.codec import dumps  # codec -> catalog -> events: no cycle

        canonical = dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical).hexdigest()


@functools.cache
def _shape(model: type[BaseModel]) -> str:
    schema = orjson.dumps(model.model_json_schema(), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(schema).hexdigest()[:16]
