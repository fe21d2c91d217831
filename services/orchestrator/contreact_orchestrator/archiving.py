"""Archiving a finished run: its log to a file, then the listing, then out of Redis.

The order is the guarantee. A run leaves the active set (``runs:active``) and its
keys get their expiry only once its archive file is written: until then the log
stays in Redis and the run stays active, so an orchestrator that stops in between
(or a restarted one) finds it there and archives it on recovery. A write that fails
(a full disk, a folder that cannot be written) is logged with the run, the path and
the error, shown in the run's listing (``archive_error``), and tried again with
growing waits by the replica's housekeeping timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import archive_path, write_archive
from contreact_bus.backoff import REDIS_DOWN
from contreact_bus.run_log import RunLog
from contreact_bus.runs import meta_fields
from contreact_events.core.fold import fold_all
from contreact_events.core.state import TERMINAL_STATUSES, AgentState
from contreact_events.names import (
    ACTIVE_RUNS,
    run_digest_key,
    run_log_key,
    run_meta_key,
    run_writer_key,
)

log = logging.getLogger(__name__)

ARCHIVE_ERROR = "archive_error"
"""Listing field of a finished run whose archive could not be written (why, and where)."""
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0


@dataclass(frozen=True)
class ArchiveFailure:
    """A finished run whose archive write failed, and when to try again."""

    run_id: str
    path: Path
    error: str
    attempts: int
    retry_at: float
    """``time.monotonic()`` of the next attempt."""


class Archiver:
    def __init__(
        self,
        redis: aioredis.Redis,
        archive_dir: Path,
        retention_s: float,
        *,
        first_retry_s: float = FIRST_RETRY_S,
        max_retry_s: float = MAX_RETRY_S,
    ) -> None:
        self._redis = redis
        self._archive_dir = archive_dir
        self._retention_s = retention_s
        self._first_retry_s = first_retry_s
        self._max_retry_s = max_retry_s
        self.failing: dict[str, ArchiveFailure] = {}
        """Finished runs whose archive is not written yet (retried by ``retry_due``)."""

    async def archive(self, state: AgentState) -> Path | None:
        """Archive the finished run's log, record its final digest, take it out of the
        active set and let its Redis keys expire after the retention. None when the
        file could not be written: the run stays active and is tried again later."""
        run_id = state.run_id
        try:
            path = await self._archive(state)
        except REDIS_DOWN as exc:  # the file (OSError) or Redis: both tried again later
            await self._failed(run_id, exc)
            return None
        if self.failing.pop(run_id, None) is not None:
            log.warning("run %s: archived to %s after all", run_id, path)
        return path

    async def _archive(self, state: AgentState) -> Path:
        run_id = state.run_id
        events = await RunLog(self._redis).events(run_id)
        path = await asyncio.to_thread(write_archive, self._archive_dir, run_id, events)
        meta: dict[Any, Any] = {
            **meta_fields(state),
            "digest": state.digest(),
            "digest_shape": AgentState.shape(),
            # The name in the archive folder: a path past 64 bytes turned the hash from a
            # listpack into a hashtable, 1 KiB a finished run kept (bench.services.scale).
            "archive": path.name,
        }
        # The hash outlives the log (run ids are not reused): its empty fields go, which
        # every reader takes as empty (``RunListing.from_hash``), 64 bytes a run.
        empty = [name for name, value in meta.items() if value == ""]
        retention = max(1, int(self._retention_s))
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(run_meta_key(run_id), mapping={k: v for k, v in meta.items() if v != ""})
            pipe.hdel(run_meta_key(run_id), ARCHIVE_ERROR, *empty)
            for key in (run_log_key, run_writer_key, run_digest_key):
                pipe.expire(key(run_id), retention)
            pipe.srem(ACTIVE_RUNS, run_id)  # last: cut short, recovery archives it again
            await pipe.execute()
        return path

    async def retry_due(self, now: float | None = None) -> int:
        """Try again every failed archive whose wait is over (the state is folded from
        the log, which stays in Redis until then). Returns how many got archived."""
        now = time.monotonic() if now is None else now
        archived = 0
        for failure in [f for f in self.failing.values() if f.retry_at <= now]:
            if failure.run_id not in self.failing:
                continue  # forgotten meanwhile (its shard went to another replica)
            events = await RunLog(self._redis).events(failure.run_id)
            if not events:  # archived and expired by another owner of the shard
                self.failing.pop(failure.run_id, None)
                continue
            if await self.archive(fold_all(events)) is not None:
                archived += 1
        return archived

    def forget(self, run_id: str) -> None:
        """Stop retrying here (another replica owns the run now, and recovers it)."""
        self.failing.pop(run_id, None)

    async def _failed(self, run_id: str, exc: BaseException) -> None:
        path = archive_path(self._archive_dir, run_id)
        before = self.failing.get(run_id)
        attempts = before.attempts + 1 if before else 1
        wait = min(self._first_retry_s * 2 ** (attempts - 1), self._max_retry_s)
        error = f"{type(exc).__name__}: {exc}"
        self.failing[run_id] = ArchiveFailure(
            run_id, path, error, attempts, time.monotonic() + wait
        )
        log.error(
            "run %s: could not be archived to %s (%s); attempt %d, trying again in %.0f s "
            "(the run stays in Redis and in the active runs until then)",
            run_id,
            path,
            error,
            attempts,
            wait,
        )
        reason = f"{path} could not be written ({error}); attempt {attempts}, retrying"
        with contextlib.suppress(*REDIS_DOWN):  # Redis away: the log line says it
            await self._redis.hset(run_meta_key(run_id), ARCHIVE_ERROR, reason[:2000])


async def listed_state(redis: aioredis.Redis, run_id: str, archive_dir: Path) -> AgentState:
    """A run with neither log nor archive here: new, unless its listing says it
    ran (its log left Redis, and its archive is elsewhere or gone). Such a run is
    held as ended, so ``decide`` refuses its id as it refuses any existing run's."""
    status = await redis.hget(run_meta_key(run_id), "status")
    if status is None:
        return AgentState(run_id=run_id)
    text = status.decode() if isinstance(status, bytes) else str(status)
    log.warning(
        "run %s: listed as %s, but its log left Redis and %s holds no archive of it",
        run_id,
        text,
        archive_dir,
    )
    return AgentState(
        run_id=run_id,
        status=text if text in TERMINAL_STATUSES else "failed",
        phase="done",
        failure_reason=f"listed as {text}; its log and archive are not here",
    )
