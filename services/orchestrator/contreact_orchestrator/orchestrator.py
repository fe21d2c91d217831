"""The orchestrator's shell around the pure core: read inbox → fold → decide →
append to the run log → enqueue tasks → ack (the ack is ``serve``'s, after return).

The run log is the outbox: events are appended first (one MULTI/EXEC on the run's
own key), tasks sent after. If the process dies in between, ``recover`` folds every
unfinished run and sends its pending tasks again; workers treat repeats as the same
task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_bus.llm_routes import llm_task_stream
from contreact_bus.run_log import RunLog
from contreact_bus.runs import active_run_ids, meta_fields, queue_meta, register_run
from contreact_bus.task_stream import TaskStream
from contreact_events.catalog import Event
from contreact_events.decide import Decision, Task, decide
from contreact_events.fold import fold_all
from contreact_events.names import (
    ACTIVE_RUNS,
    EMBED_TASKS_STREAM,
    LLM_TASKS_STREAM,
    MEMORY_TASKS_STREAM,
    run_digest_key,
)
from contreact_events.prompt import pending_tasks
from contreact_events.protocol import paper_system_prompt
from contreact_events.state import AgentState
from contreact_events.tasks import DIGEST_REQUEST, EmbedTask, InboxMessage, LLMTask

log = logging.getLogger(__name__)

DIGEST_TTL_S = 300


class Orchestrator:
    """Drives every run at once. It is the only writer of run logs."""

    def __init__(self, redis: aioredis.Redis, archive_dir: Path, version: str) -> None:
        self._redis = redis
        self._archive_dir = archive_dir
        self._version = version
        self._log = RunLog(redis)
        self._llm = TaskStream(redis, LLM_TASKS_STREAM)
        self._memory = TaskStream(redis, MEMORY_TASKS_STREAM)
        self._embed = TaskStream(redis, EMBED_TASKS_STREAM)
        self._states: dict[str, AgentState] = {}
        self._meta: dict[str, dict[str, str]] = {}
        """The meta hash last written per run: written again only when it changes."""

    async def recover(self) -> int:
        """Rebuild every unfinished run from its log and send its pending tasks again."""
        resent = 0
        for run_id in await active_run_ids(self._redis):
            events = await self._log.events(run_id)
            if not events:
                await self._redis.srem(ACTIVE_RUNS, run_id)
                continue
            state = fold_all(events)
            if state.terminal:
                await self._finish(state)
                continue
            self._states[run_id] = state
            tasks = pending_tasks(state)
            await self._write(state, (), tasks)
            resent += len(tasks)
        log.info("recovered %d active run(s), re-sent %d task(s)", len(self._states), resent)
        return resent

    async def handle(self, message: InboxMessage) -> None:
        if message.kind == DIGEST_REQUEST:
            await self._answer_digest(message.run_id)
            return
        state = await self._state(message.run_id)
        if message.kind == "RunRequested":
            message = self._complete_request(message)
        event = message.to_event(datetime.now(UTC))
        decision = decide(state, event)
        if decision.ignored is not None:
            log.info("run %s: ignored %s: %s", message.run_id, message.kind, decision.ignored)
            return
        await self._commit(state, decision)

    async def _commit(self, before: AgentState, decision: Decision) -> None:
        state = decision.state
        if before.phase == "new":
            experiment = state.config.experiment if state.config else None
            await register_run(self._redis, state.run_id, experiment)
        await self._write(state, decision.events, decision.tasks)
        self._states[state.run_id] = state
        if state.terminal:
            await self._finish(state)

    async def _write(
        self, state: AgentState, events: Sequence[Event], tasks: Sequence[Task]
    ) -> None:
        """One round trip: the events appended atomically first (the log is the
        outbox), then the tasks they call for, then the listing projection if it
        changed. Redis runs them in that order; a failure raises after the fact and
        the held state is not advanced, so the input is retried."""
        meta = meta_fields(state)
        meta_changed = meta != self._meta.get(state.run_id)
        if not events and not tasks and not meta_changed:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            if events:
                self._log.queue_append(pipe, state.run_id, events)
            for task in tasks:
                self._stream_for(task).queue(pipe, task)
            if meta_changed:
                queue_meta(pipe, state, meta)
            await pipe.execute()
        self._meta[state.run_id] = meta

    def _stream_for(self, task: Task) -> TaskStream:
        if isinstance(task, LLMTask):  # checks to tasks:llm, chats to their route's stream
            return llm_task_stream(self._redis, task)
        if isinstance(task, EmbedTask):
            return self._embed
        return self._memory

    async def _finish(self, state: AgentState) -> None:
        """Archive the finished run's log to disk and record the final state digest."""
        events = await self._log.events(state.run_id)
        path = await asyncio.to_thread(write_archive, self._archive_dir, state.run_id, events)
        meta = {**meta_fields(state), "digest": state.digest(), "archive": str(path)}
        async with self._redis.pipeline(transaction=False) as pipe:
            queue_meta(pipe, state, meta)
            await pipe.execute()
        self._states.pop(state.run_id, None)
        self._meta.pop(state.run_id, None)
        log.info("run %s %s; archived to %s", state.run_id, state.status, path)

    async def _state(self, run_id: str) -> AgentState:
        state = self._states.get(run_id)
        if state is None:
            events = await self._log.events(run_id)
            if not events:  # not held: a stray message must not leave a state behind
                return AgentState(run_id=run_id)
            state = fold_all(events)
            if not state.terminal:
                self._states[run_id] = state
        return state

    def _complete_request(self, message: InboxMessage) -> InboxMessage:
        """Stamp the code version; use the paper's prompt when none was given."""
        data: dict[str, Any] = {**message.data, "orchestrator_version": self._version}
        config = data.get("config")
        if isinstance(config, dict) and not config.get("system_prompt"):
            data["config"] = {**config, "system_prompt": paper_system_prompt()}
        return message.model_copy(update={"data": data})

    async def _answer_digest(self, run_id: str) -> None:
        held = self._states.get(run_id)
        source = "memory" if held is not None else "log"
        state = held or await self._state(run_id)
        key = run_digest_key(run_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(
                key, mapping={"digest": state.digest(), "seq": str(state.seq), "held": source}
            )
            pipe.expire(key, DIGEST_TTL_S)
            await pipe.execute()
