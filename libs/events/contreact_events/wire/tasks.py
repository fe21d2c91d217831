"""Messages on the bus that are not run-log events: tasks for workers, and the inbox
messages (worker results, CLI commands) that the orchestrator turns into input events;
the constructors of those that answer a task or carry an input are in ``answers.py``.

Tasks carry their whole payload (the LLM task carries the full message list) and
may be trimmed from their streams; the run log is the record.

A task's digest (``task_digest``) is the SHA-256 of its bytes as sent: the orchestrator
encodes a task once, records the hash of those bytes on the run's writer key and
``XADD``s them, and the worker hashes the bytes it received, so neither side dumps and
sorts the whole message list again (issue 20: that canonical form cost more than the
task's own encoding, on both sides of every step). A worker without the bytes at hand
encodes the task again; a task recorded with the canonical digest of before is still
recognised (``digest_matches``), so tasks in flight across an upgrade go on.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contreact_events.catalog import EVENT_ADAPTER, EVENT_CLASSES, Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.envelope import InputEvent
from contreact_events.config import RUN_ID_PATTERN, Backend, ScriptConfig
from contreact_events.config.spend import ModelPrice
from contreact_events.exceptions import CorruptEvent
from contreact_events.wire.codec import dumps


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMTask(_Frozen):
    """For the LLM worker: ``check`` resolves the backend and checks the model is
    there; ``chat`` asks for one completion; ``analysis`` asks for an operator
    exchange's analysis as JSON (``json_schema``), answered as
    ``OperatorMessageAnalyzed``."""

    kind: Literal["check", "chat", "analysis"]
    task_id: str
    run_id: str
    backend: Backend
    model: str
    host: str
    """Where the call goes: the host the worker chose from ``hosts`` (the first until then)."""
    hosts: tuple[str, ...] = ()
    """Every host that may answer (an Ollama pool; an OpenAI-compatible base URL)."""
    api_key_env: str | None = None
    """OpenAI-compatible servers: the worker's environment variable holding the key."""
    timeout_s: float | None = None
    messages: tuple[ChatMessage, ...] = ()
    tools: tuple[dict[str, Any], ...] = ()
    options: dict[str, Any] = Field(default_factory=dict)
    keep_alive: str | None = None
    call_index: int = 0
    cycle: int = 0
    step: int = 0
    script: ScriptConfig | None = None
    deadline: datetime | None = None
    """When the run stops waiting for this send (a worker neither starts nor retries
    a call past it: the run has sent the task again, or given up)."""
    send: int = 1
    """Which send of the task this is (1, then 2 after a retry...)."""
    max_content_chars: int | None = None
    """Answer text past this is cut by the worker (``limits.llm_content_chars``)."""
    connect_timeout_s: float = 5.0
    """Longest wait to reach the model server (``ollama_client_config.connect_timeout_s``)."""
    json_schema: dict[str, Any] | None = None
    """The answer's JSON schema, given to backends that take one (Ollama ``format``,
    OpenAI ``response_format``)."""
    holds_cycle: bool = False
    """An analysis the run's next call waits for (``cognition.memory_policy``): it goes
    to its model's line of run calls, not the background line of analyses."""
    reply_to: str | None = None
    """None: a call of a run, answered through the orchestrator's inbox and checked
    against the run's log (``TaskGate``). Else the id of the assessment job that waits
    for the answer: it goes to that job's reply list (``names.assessment_reply_key``)
    and the task is checked against the job's gate record instead, so a run that has
    ended can be rated (its log asks for nothing any more)."""
    price: ModelPrice | None = None
    """The run's model's price from its price table: the worker prices the call with it
    when the provider reports no cost (``config/spend.py``)."""
    call_timeout_s: float | None = None
    """A call whose sender waits for it to start (an assessment job's): the worker that
    takes it gives it ``deadline`` = then + this, so the time it waited in the queue
    behind live runs does not count against it."""


class MemoryTask(_Frozen):
    """For the memory service: apply one memory tool call of a run, exactly once."""

    task_id: str
    run_id: str
    tool: str
    arguments: dict[str, Any]
    ts: datetime
    """Time of the request (stored as the entry's update time, so a rebuild matches)."""
    deadline: datetime | None = None
    send: int = 1
    reserved_prefix: str | None = None
    """Keys the agent's ``write`` and ``delete`` may not touch (the memory policy's,
    ``cognition.policy.PERSISTENT_PREFIX``, when the run has it on); None: none."""


class EmbedTask(_Frozen):
    """For the embedder. ``reflection``: embed a cycle's reflection (seed 000).
    ``paragraphs``: split an answer into paragraphs, embed them and compare them with
    the corpus of the scope (seed 001). ``search``: the agent's ``search_memory`` call
    (seed 004), answered as the tool's result. ``memories``: the run's memories most
    relevant to ``text`` for the cycle's prompt block (``cognition.memory_block``),
    answered as ``MemoriesRetrieved``."""

    kind: Literal["reflection", "paragraphs", "search", "memories"] = "reflection"
    task_id: str
    run_id: str
    cycle: int
    text: str
    model: str
    attempt: int = 1
    scope: str = ""
    experiment: str | None = None
    threshold: float = 0.85
    min_length: int = 50
    extra_patterns: tuple[str, ...] = ()
    attempts_remaining: int = 0
    k: int = 5
    """``search``: how many results (the text is the query)."""
    deadline: datetime | None = None
    send: int = 1


INPUT_EVENT_TYPES = frozenset(
    name for name, cls in EVENT_CLASSES.items() if issubclass(cls, InputEvent)
)
"""Event types that enter through the inbox (subclasses of ``InputEvent``); all others are
decided."""

DIGEST_REQUEST = "StateDigestRequested"
"""Inbox control message: write the held state's digest to ``run_digest_key``."""


FORK_REQUEST = "ForkRequested"
"""Inbox control message, on the child's shard: fork a run (``ForkRequest``); the
orchestrator reads the parent and logs the child's first append, or refuses
(``run_fork_refusal_key``)."""


class ForkRequest(_Frozen):
    """What ``contreact fork`` asks for (the data of a ``FORK_REQUEST`` message)."""

    parent_run_id: str = Field(pattern=RUN_ID_PATTERN.pattern)
    at_cycle: int
    model: str | None = None
    settings: tuple[str, ...] = ()
    """``key=value`` texts, parsed by ``config.overrides.parse_assignments``."""
    question: str = ""
    """``contreact ask``: a researcher's question the fork's first cycle opens with."""


def fork_requested(child_run_id: str, request: ForkRequest) -> InboxMessage:
    return InboxMessage(
        run_id=child_run_id, kind=FORK_REQUEST, data=request.model_dump(mode="json")
    )


class InboxMessage(_Frozen):
    """Something for the orchestrator: an input event's data, or a control request."""

    msg_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    run_id: str = Field(pattern=RUN_ID_PATTERN.pattern)
    kind: str
    causation_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    def to_event(self, ts: datetime) -> Event:
        """The input event this message stands for, stamped with its receipt time."""
        if self.kind not in INPUT_EVENT_TYPES:
            raise CorruptEvent(f"inbox message {self.msg_id}: {self.kind!r} is not an input")
        try:
            return EVENT_ADAPTER.validate_python(
                {
                    **self.data,
                    "type": self.kind,
                    "event_id": self.msg_id,
                    "run_id": self.run_id,
                    "ts": ts,
                    "causation_id": self.causation_id,
                    "correlation_id": self.run_id,
                }
            )
        except ValidationError as exc:
            raise CorruptEvent(f"inbox message {self.msg_id} ({self.kind}): {exc}") from None


def task_bytes(task: BaseModel) -> bytes:
    """A task as it travels (the ``msg`` field of its stream entry: ``codec.message_to_fields``)."""
    return task.__pydantic_serializer__.to_json(task)


def digest_of(raw: bytes) -> str:
    """SHA-256 of a task's bytes as sent (``task_bytes``): the digest the orchestrator
    records with the events that call for the task."""
    return hashlib.sha256(raw).hexdigest()


def task_digest(task: BaseModel) -> str:
    """The digest of a task: SHA-256 of its bytes as sent (``task_bytes``). The
    orchestrator records it with the events that call for the task, and a worker applies
    a task only if it matches (so a task from anyone else, or a stale copy, has no
    effect). A worker that holds the bytes it received hashes those (``digest_matches``):
    the whole message list of an LLM task is then neither dumped nor sorted on either
    side (issue 20: that canonical form cost more than the task's own encoding)."""
    return digest_of(task_bytes(task))


def canonical_task_digest(task: BaseModel) -> str:
    """The digest recorded before issue 20: SHA-256 of the task's canonical JSON (keys
    sorted). Still accepted by ``digest_matches``, for tasks recorded by an orchestrator
    of that version and still in flight across an upgrade."""
    return hashlib.sha256(dumps(task.model_dump(mode="json"), sort_keys=True)).hexdigest()


def digest_matches(recorded: str, task: BaseModel, raw: bytes | None = None) -> bool:
    """Whether ``recorded`` is the digest of ``task``: of the bytes it arrived as
    (``raw``, when the caller has them: one hash, no re-encoding), else of the task
    encoded again, else (a task recorded before issue 20) of its canonical form."""
    if raw is not None and digest_of(raw) == recorded:
        return True
    return recorded in (task_digest(task), canonical_task_digest(task))
