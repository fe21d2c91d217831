"""An LLM task's message history, encoded and validated once per run (issue 20).

A chat task carries its run's whole message list (23 kB at cycle 100 of the bus
benchmark), and every step used to pay for all of it twice: the orchestrator encoded
the whole task (``tasks.task_bytes``) and the LLM worker validated every
``ChatMessage`` of it again. Between two calls of a run the history only grows (the
fold appends messages, or replaces the newest: ``core.prompt._chain``), so both sides
keep, per run, the messages after the system message of its last chat task and their
JSON (``History``); a call encodes or validates only what is new.

The JSON of a task is ``HEAD [system,m1,...,mn] TAIL``: a tuple of models is its
elements' JSON joined by commas, each element's the same wherever it stands. So:

* ``TaskEncoder.encode`` (the orchestrator) reuses the encoding of the messages that
  are the very objects of the last call (identity: frozen models, the same bytes),
  and splices it between the task's other fields, encoded without the messages. The
  result is ``task_bytes(task)``, byte for byte: the digest the run log records is of
  those bytes (``tests/unit/test_task_history.py`` checks every state of every saved
  log and of scripted runs).
* ``TaskDecoder.decode`` (the LLM worker) finds the run's known history in the bytes
  received, validates the task without it (the other fields, the system message and
  the new messages), puts the known messages back, and keeps the result only if the
  task so decoded encodes to exactly the bytes received. Validation goes field by
  field and element by element, and each known message is what validating its bytes
  gave (it is kept only from tasks that encode to their bytes), so the task is the
  one validating all the bytes would give. Anything else (a first call, an edited
  history, malformed bytes) is decoded the plain way (``codec.message_from_fields``),
  with the same ``CorruptEvent`` naming the problem. The gate still hashes the bytes
  as received.

Pure: no I/O. Each side holds one cache for its process, bounded in runs and bytes.

Analyses and checks (an exchange of their own, no history) and histories under
``MIN_MESSAGES`` (cheaper the plain way) are not kept. Each cache holds at most
``MAX_RUNS`` runs and ``MAX_BYTES`` of JSON, least recently used out (past that a worker
decodes the runs it had to drop the plain way, plus one encoding to check the history
before keeping it again); the orchestrator drops a run's when it stops holding it.
``python -m bench.log.task_codec`` measures both sides.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from contreact_events.catalog.chat import ChatMessage
from contreact_events.wire.codec import MESSAGE_FIELD, message_from_fields
from contreact_events.wire.tasks import LLMTask, task_bytes

EMPTY_LIST = b'"messages":[]'
"""The messages field of a task encoded without them: where the history goes. The
first occurrence is the field: in a task's JSON a quote inside a string is escaped,
and no field before ``messages`` is an object."""
RUN_ID_KEY = b'"run_id":"'
PROBE = 64
"""Bytes of a known history looked for in a task (then compared whole): a search for
all of it would cost more than the rest of the decoding."""

MIN_MESSAGES = 32
"""Shorter tasks go the plain way: below about 30 messages, encoding or validating them
all costs less than the splice, its check and the task's other fields
(``python -m bench.log.task_codec``)."""

MAX_RUNS = 512
MAX_BYTES = 64 * 1024 * 1024
"""What a cache holds at most: the histories of this many runs, of this many bytes of
JSON in all (the least recently used go first)."""

_encode_message = ChatMessage.__pydantic_serializer__.to_json


@dataclass(frozen=True, slots=True)
class History:
    """A run's messages after the system message, with their JSON: ``body`` is the
    elements' JSON joined by commas, ``ends[i]`` where element ``i`` ends in it."""

    messages: tuple[ChatMessage, ...]
    body: bytes
    ends: tuple[int, ...]

    def extended(self, kept: int, new: Sequence[ChatMessage]) -> History:
        """The first ``kept`` messages of this history, then ``new``."""
        end = self.ends[kept - 1] if kept else 0
        parts = [self.body[:end]] if kept else []
        ends = list(self.ends[:kept])
        for message in new:
            raw = _encode_message(message)
            end += len(raw) + (1 if ends else 0)
            parts.append(raw)
            ends.append(end)
        return History((*self.messages[:kept], *new), b",".join(parts), tuple(ends))


NO_HISTORY = History((), b"", ())


class HistoryCache:
    """Histories by run, least recently used first out."""

    def __init__(self, max_runs: int = MAX_RUNS, max_bytes: int = MAX_BYTES) -> None:
        self._runs: OrderedDict[str, History] = OrderedDict()
        self._bytes = 0
        self.max_runs = max_runs
        self.max_bytes = max_bytes

    def get(self, run_id: str) -> History | None:
        return self._runs.get(run_id)

    def put(self, run_id: str, history: History) -> None:
        self.forget(run_id)
        self._runs[run_id] = history
        self._bytes += len(history.body)
        while self._runs and (len(self._runs) > self.max_runs or self._bytes > self.max_bytes):
            _, dropped = self._runs.popitem(last=False)
            self._bytes -= len(dropped.body)

    def forget(self, run_id: str) -> None:
        dropped = self._runs.pop(run_id, None)
        if dropped is not None:
            self._bytes -= len(dropped.body)

    def __len__(self) -> int:
        return len(self._runs)


def cached(task: LLMTask) -> bool:
    """Whether ``task``'s history is worth keeping: a chat's (checks have none, an
    analysis carries an exchange of its own) of ``MIN_MESSAGES`` or more."""
    return task.kind == "chat" and len(task.messages) >= MIN_MESSAGES


def splice(shell: bytes, system: bytes, history: History) -> bytes:
    """The task's JSON from its ``shell`` (encoded without messages), its system
    message's JSON and its history's."""
    at = shell.index(EMPTY_LIST) + len(EMPTY_LIST) - 1
    if not history.body:
        return b"".join((shell[:at], system, shell[at:]))
    return b"".join((shell[:at], system, b",", history.body, shell[at:]))


def shell_of(task: LLMTask) -> bytes:
    return task_bytes(task.model_copy(update={"messages": ()}))


class TaskEncoder:
    """``task_bytes`` for the orchestrator, each run's history encoded once."""

    def __init__(self, cache: HistoryCache | None = None) -> None:
        self.cache = cache if cache is not None else HistoryCache()
        self.reused = 0
        """Tasks encoded with some of their run's history known (tests, benchmarks)."""

    def encode(self, task: LLMTask) -> bytes:
        if not cached(task):
            return task_bytes(task)
        system, *messages = task.messages
        known = self.cache.get(task.run_id) or NO_HISTORY
        kept = _same_objects(known.messages, messages)
        if kept == len(messages) == len(known.messages):
            history = known  # (the same task again)
        else:
            history = known.extended(kept, messages[kept:])
        self.reused += kept > 0
        self.cache.put(task.run_id, history)
        return splice(shell_of(task), _encode_message(system), history)

    def forget(self, run_id: str) -> None:
        self.cache.forget(run_id)


def _same_objects(known: Sequence[ChatMessage], messages: Sequence[ChatMessage]) -> int:
    """How many leading messages are the very objects ``known`` holds."""
    if len(known) <= len(messages) and all(map(operator.is_, known, messages)):
        return len(known)
    kept = 0
    for old, new in zip(known, messages, strict=False):
        if old is not new:
            break
        kept += 1
    return kept


class TaskDecoder:
    """LLM tasks from their stream entries for the worker, each run's known history
    validated once (the module's docstring says why the result is exact)."""

    def __init__(self, cache: HistoryCache | None = None) -> None:
        self.cache = cache if cache is not None else HistoryCache()
        self.reused = 0
        """Tasks decoded with their run's known history (tests, benchmarks)."""

    def decode(self, fields: Mapping[Any, Any]) -> LLMTask:
        """The task in ``fields`` (``codec.message_from_fields``'s result, and its
        ``CorruptEvent`` for a malformed one)."""
        raw = fields.get(MESSAGE_FIELD.encode(), fields.get(MESSAGE_FIELD))
        if isinstance(raw, bytes):
            task = self._known(raw)
            if task is not None:
                return task
        task = message_from_fields(LLMTask, fields)
        if isinstance(raw, bytes) and cached(task):
            history = NO_HISTORY.extended(0, task.messages[1:])
            if splice(shell_of(task), _encode_message(task.messages[0]), history) == raw:
                self.cache.put(task.run_id, history)
        return task

    def _known(self, raw: bytes) -> LLMTask | None:
        """The task, when ``raw`` holds its run's known history after the system
        message and decodes exactly with it; else None."""
        known = self.cache.get(_run_id(raw))
        if known is None:
            return None
        start = raw.find(b'"messages":[')
        at = raw.find(known.body[:PROBE], start) if start >= 0 else -1
        end = at + len(known.body)
        if at <= start or raw[at - 1 : at] != b"," or raw[end : end + 1] not in (b",", b"]"):
            return None
        if not raw.startswith(known.body, at):
            return None
        try:
            short = LLMTask.model_validate_json(raw[: at - 1] + raw[end:])
        except ValidationError:
            return None
        if not short.messages:
            return None
        system, *new = short.messages
        history = known.extended(len(known.messages), new)
        task = short.model_copy(update={"messages": (system, *history.messages)})
        if not cached(task) or splice(shell_of(short), _encode_message(system), history) != raw:
            return None
        self.cache.put(task.run_id, history)
        self.reused += 1
        return task


def _run_id(raw: bytes) -> str:
    """The run id as the task's bytes spell it, read without parsing (a wrong guess
    only misses the cache: what is decoded with it is checked)."""
    start = raw.find(RUN_ID_KEY)
    if start < 0:
        return ""
    start += len(RUN_ID_KEY)
    end = raw.find(b'"', start)
    return raw[start:end].decode("utf-8", "replace") if end > start else ""
