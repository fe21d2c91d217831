"""Where the orchestrator's tasks go, and which of them are already on their way.

A model check goes to ``tasks:llm``, a chat to its route's stream, a memory call to
``tasks:memory``, an embedding or paragraph check to ``tasks:embed``. After a shard
changes hands, the tasks its runs wait on are looked up in those streams and in the
inbox: one that is in neither was lost between the append and the send, and is sent
again (the run log is the outbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.llm_routes import known_routes, llm_task_stream
from contreact_bus.replies import entries
from contreact_bus.run_log import PendingTask
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.core.decide import Task
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.state import AgentState
from contreact_events.names import EMBED_TASKS_STREAM, LLM_TASKS_STREAM, MEMORY_TASKS_STREAM
from contreact_events.wire.task_history import TaskEncoder
from contreact_events.wire.tasks import EmbedTask, LLMTask, digest_of, task_bytes, task_digest


class TaskSender:
    """Puts each task on the stream of the worker kind that answers it."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis
        self._memory = TaskStream(redis, MEMORY_TASKS_STREAM)
        self._embed = TaskStream(redis, EMBED_TASKS_STREAM)
        self._encoded: tuple[Task, bytes] | None = None
        self._histories = TaskEncoder()

    def encode(self, task: Task) -> bytes:
        """``task`` as it will be sent (``tasks.task_bytes``, byte for byte), kept for
        its ``queue``: a task whose digest is recorded is encoded once, for both. A
        chat's history is encoded once per run (``task_history.TaskEncoder``)."""
        raw = self._histories.encode(task) if isinstance(task, LLMTask) else task_bytes(task)
        self._encoded = (task, raw)
        return raw

    def recorded(self, state: AgentState, tasks: Sequence[Task]) -> PendingTask | None:
        """The task the append records for ``state`` (workers check tasks against it):
        its gating task, encoded here once (the digest is of the bytes sent); none
        pending: recorded as ""; open tasks (analyses) only: nothing recorded, as no
        worker effect hangs on them."""
        gating = [t for t in tasks if t.task_id == state.pending_task_id]
        if gating:
            return PendingTask(gating[0].task_id, digest_of(self.encode(gating[0])))
        return PendingTask("", "") if state.pending_task_id is None else None

    def forget(self, run_id: str) -> None:
        """Drop what is kept of a run that is no longer held."""
        self._histories.forget(run_id)

    def queue(self, pipe: Pipeline, task: Task) -> None:
        """Queue ``task``'s send on ``pipe`` (sent with whatever else the pipe holds);
        the bytes ``encode`` made of it, if it was the last task encoded."""
        encoded, self._encoded = self._encoded, None
        raw = encoded[1] if encoded is not None and encoded[0] is task else None
        self._stream_for(task).queue(pipe, task, raw)

    async def send(self, tasks: Sequence[Task]) -> None:
        if not tasks:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for task in tasks:
                self.queue(pipe, task)
            await pipe.execute()

    async def missing(self, wanted: Sequence[Task], inbox: str) -> list[Task]:
        """The tasks of ``wanted`` that are in no task stream and have no answer
        waiting in the ``inbox`` stream."""
        if not wanted:
            return []
        present = await _queued_tasks(self._redis, await self._streams())
        answered = await _answered_tasks(self._redis, inbox)
        return [
            task
            for task in wanted
            if (task.task_id, task.send) not in present and task.task_id not in answered
        ]

    async def _streams(self) -> list[str]:
        """Every stream a task may wait in: the model checks', each LLM route's, the
        memory service's and the embedder's."""
        routes = [route.stream for route in (await known_routes(self._redis)).values()]
        return [LLM_TASKS_STREAM, *routes, MEMORY_TASKS_STREAM, EMBED_TASKS_STREAM]

    def _stream_for(self, task: Task) -> TaskStream:
        if isinstance(task, LLMTask):  # checks to tasks:llm, chats to their route's stream
            return llm_task_stream(self._redis, task)
        if isinstance(task, EmbedTask):
            return self._embed
        return self._memory


async def _queued_tasks(redis: aioredis.Redis, streams: Sequence[str]) -> set[tuple[str, int]]:
    """(task id, send) of every task entry still in these streams (queued, in work, or
    acked but not yet trimmed: in each case it is not lost)."""
    present: set[tuple[str, int]] = set()
    for stream in streams:
        start: bytes | str = "-"
        while True:
            page = entries(await redis.xrange(stream, min=start, max="+", count=500))
            for _entry_id, fields in page:
                data = _json(fields.get(b"msg"))
                if isinstance(data.get("task_id"), str):
                    present.add((data["task_id"], int(data.get("send") or 1)))
            if len(page) < 500:
                break
            start = b"(" + page[-1][0]
    return present


async def _answered_tasks(redis: aioredis.Redis, stream: str) -> set[str]:
    """Task ids answered by a message still in an inbox shard."""
    answered: set[str] = set()
    for _entry_id, fields in entries(await redis.xrange(stream)):
        cause = _json(fields.get(b"msg")).get("causation_id")
        if isinstance(cause, str):
            answered.add(cause)
    return answered


def _json(raw: bytes | None) -> dict[str, Any]:
    try:
        data = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def pending_of(state: AgentState) -> PendingTask | None:
    """The task a run waits on, as its lease claim records it (id and digest)."""
    tasks = [t for t in pending_tasks(state) if t.task_id == state.pending_task_id]
    return PendingTask(tasks[0].task_id, task_digest(tasks[0])) if tasks else None
