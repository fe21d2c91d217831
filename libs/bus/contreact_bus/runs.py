"""Reading runs for the CLI and tools: the run log in Redis, else the archive; the
listing projection (``runs:index`` and each run's meta hash)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.replies import text_map, texts
from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.names import (
    ACTIVE_RUNS,
    RUNS_INDEX,
    SERVICES_HEARTBEAT,
    experiment_runs_key,
    run_meta_key,
)
from contreact_events.state import AgentState


async def load_events(redis: aioredis.Redis | None, archive_dir: Path, run_id: str) -> list[Event]:
    """The run's events from Redis, or from its archive file when Redis lacks it."""
    if redis is not None:
        events = await RunLog(redis).events(run_id)
        if events:
            return events
    archived = read_archive(archive_dir, run_id)
    if archived:
        return archived
    raise RunNotFound(
        f"no run '{run_id}' in Redis or in {archive_dir} (see `contreact runs` for the list)"
    )


def meta_fields(state: AgentState) -> dict[str, str]:
    """The listing projection of a state (strings, for a Redis hash). It changes a few
    times per cycle, not every step, so the orchestrator writes it only on change."""
    config = state.config
    waiting = state.waiting_for
    return {
        "run_id": state.run_id,
        "status": state.status,
        "cycle": str(state.cycle_number),
        "cycle_count": str(config.cycle_count if config else 0),
        "model": config.model_name if config else "",
        "backend": state.backend or (config.backend if config else ""),
        "ran_model": state.resolved_model,
        "experiment": (config.experiment or "") if config else "",
        "waiting_task": waiting.task_id if waiting else "",
        "failure_reason": state.failure_reason or "",
    }


def queue_meta(pipe: Any, state: AgentState, fields: dict[str, str]) -> None:
    """Add a meta update to a pipeline (and, for an ended run, leave the active set)."""
    pipe.hset(run_meta_key(state.run_id), mapping=fields)
    if state.terminal:
        pipe.srem(ACTIVE_RUNS, state.run_id)


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


async def list_runs(redis: aioredis.Redis) -> list[dict[str, str]]:
    """Every indexed run's meta, oldest first."""
    ids = texts(await redis.zrange(RUNS_INDEX, 0, -1))
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.hgetall(run_meta_key(run_id))
        metas = await pipe.execute()
    out = []
    for run_id, meta in zip(ids, metas, strict=True):
        row = text_map(meta)
        row.setdefault("run_id", run_id)
        out.append(row)
    return out


async def beat(redis: aioredis.Redis, service: str) -> None:
    await redis.hset(SERVICES_HEARTBEAT, service, f"{time.time():.3f}")


async def heartbeats(redis: aioredis.Redis) -> dict[str, float]:
    return {k: float(v) for k, v in text_map(await redis.hgetall(SERVICES_HEARTBEAT)).items()}
