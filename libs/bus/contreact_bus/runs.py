"""Reading runs for the CLI and tools: the run log in Redis, else the archive; the
listing projection (``runs:index`` and each run's meta hash)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.replies import text_map, texts
from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.core.state import AgentState
from contreact_events.history.run_summary import RunListing, listing_fields
from contreact_events.names import (
    ACTIVE_RUNS,
    RUNS_INDEX,
    experiment_runs_key,
    run_meta_key,
)


async def load_events(redis: aioredis.Redis | None, archive_dir: Path, run_id: str) -> list[Event]:
    """The run's events from Redis, or from its archive file when Redis lacks it."""
    if redis is not None:
        events = await RunLog(redis).events(run_id)
        if events:
            return events
    archived = await asyncio.to_thread(read_archive, archive_dir, run_id)
    if archived:
        return archived
    raise RunNotFound(
        f"no run '{run_id}' in Redis or in {archive_dir} (see `contreact runs` for the list)"
    )


def meta_fields(state: AgentState) -> dict[str, str]:
    """The listing projection of a state (strings, for a Redis hash): the slow-changing
    fields of its ``run_summary``, so the orchestrator writes it only on change."""
    return listing_fields(state)


async def register_run(redis: aioredis.Redis, run_id: str, experiment: str | None) -> None:
    """Index a new run (called once, before its first event is appended)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zadd(RUNS_INDEX, {run_id: time.time()}, nx=True)
        pipe.sadd(ACTIVE_RUNS, run_id)
        if experiment:
            pipe.sadd(experiment_runs_key(experiment), run_id)
        await pipe.execute()


async def experiment_run_ids(redis: aioredis.Redis, experiment: str) -> list[str]:
    return sorted(texts(await redis.smembers(experiment_runs_key(experiment))))


async def active_run_ids(redis: aioredis.Redis) -> list[str]:
    return sorted(texts(await redis.smembers(ACTIVE_RUNS)))


async def list_runs(redis: aioredis.Redis) -> list[RunListing]:
    """Every indexed run's listing, oldest first."""
    ids = texts(await redis.zrange(RUNS_INDEX, 0, -1))
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.hgetall(run_meta_key(run_id))
        metas = await pipe.execute()
    return [
        RunListing.from_hash({"run_id": run_id, **text_map(meta)})
        for run_id, meta in zip(ids, metas, strict=True)
    ]
