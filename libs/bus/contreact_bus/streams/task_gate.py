"""Workers with effects apply only tasks their run's log asked for.

The orchestrator records, atomically with the events that call for a task, the task's
id and digest on the run's writer hash. A task that does not match (sent by anyone
but the run's orchestrator, a stale copy from before a retry, a task of a run that
was cancelled or moved on) is dropped with the reason, never applied.
"""

from __future__ import annotations

from datetime import UTC, datetime

import redis.asyncio as aioredis
from pydantic import BaseModel

from contreact_bus.run_log import RunLog
from contreact_events.wire.tasks import digest_matches


class TaskGate:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._log = RunLog(redis)

    async def refusal(
        self,
        run_id: str,
        task_id: str,
        task: BaseModel,
        deadline: datetime | None,
        *,
        raw: bytes | None = None,
    ) -> str | None:
        """None if the run waits on exactly this task now; else why it is dropped.
        ``raw``: the bytes the task arrived as (hashed as they are: no re-encoding)."""
        recorded = await self._log.pending_task(run_id)
        if recorded is None or not recorded.task_id:
            return f"run {run_id} waits on no task now (its log did not ask for {task_id})"
        if recorded.task_id != task_id:
            return f"run {run_id} waits on {recorded.task_id}, not {task_id}"
        if not digest_matches(recorded.digest, task, raw):
            return f"{task_id} is not the copy the run's log asked for (it was sent again)"
        if deadline is not None and datetime.now(UTC) > deadline:
            return f"{task_id} is past its deadline (the run has sent it again, or given up)"
        return None
