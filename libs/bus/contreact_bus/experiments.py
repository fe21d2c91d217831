"""An experiment's record in Redis: which run is each replica's current attempt, and
what state each run is in (the listing projection, else the archive)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.archive import archive_path, read_archive
from contreact_bus.replies import text, text_map
from contreact_events.catalog import Event
from contreact_events.catalog.fork import RunForked
from contreact_events.config.experiment_resume import Recorded, Submission
from contreact_events.config.run_places import RunFacts
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.names import experiment_replicas_key, run_log_key, run_meta_key


@dataclass(frozen=True)
class ReplicaEntry:
    """One replica as the record holds it."""

    replica: str
    label: str
    letter: str
    model: str
    run_id: str
    attempt: int
    config_sha256: str

    @property
    def recorded(self) -> Recorded:
        return Recorded(self.run_id, self.attempt, self.config_sha256)

    @property
    def first_run_id(self) -> str:
        return self.run_id.rsplit(".", 1)[0] if self.attempt > 1 else self.run_id

    @classmethod
    def of(cls, submission: Submission) -> ReplicaEntry:
        planned = submission.planned
        return cls(
            replica=planned.replica,
            label=planned.label,
            letter=planned.letter,
            model=planned.config.model_name,
            run_id=submission.config.run_id,
            attempt=submission.attempt,
            config_sha256=planned.config_sha256,
        )


def logged_facts(
    events: Sequence[Event], experiment: str, state: AgentState | None = None
) -> RunFacts:
    """What a run's log says of its place in ``experiment``: its model, the model that
    ran, and for a fork its parent and K (its last ``RunForked``: a fork of a fork also
    holds its parent's, copied). ``state``: the log folded, when the caller has it."""
    state = state or fold_all(events)
    forked = next((e for e in reversed(events) if isinstance(e, RunForked)), None)
    return RunFacts(
        state.run_id,
        experiment,
        state.model_name,
        state.resolved_model,
        forked.parent_run_id if forked else "",
        forked.at_cycle if forked else 0,
    )


async def replica_entries(redis: aioredis.Redis, experiment: str) -> dict[str, ReplicaEntry]:
    raw = text_map(await redis.hgetall(experiment_replicas_key(experiment)))
    return {replica: ReplicaEntry(**orjson.loads(value)) for replica, value in raw.items()}


def queue_entry(pipe: Pipeline, experiment: str, entry: ReplicaEntry) -> None:
    pipe.hset(experiment_replicas_key(experiment), entry.replica, orjson.dumps(asdict(entry)))


async def run_statuses(
    redis: aioredis.Redis, archive_dir: Path, run_ids: Iterable[str]
) -> dict[str, str | None]:
    """Each run's status: its meta hash, else its archive folded; None when the run
    left no trace (never requested, or its request not taken yet)."""
    ids = list(run_ids)
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.hget(run_meta_key(run_id), "status")
        replies = await pipe.execute()
    out: dict[str, str | None] = {}
    for run_id, status in zip(ids, replies, strict=True):
        out[run_id] = text(status) if status else None
        if status is None and archive_path(archive_dir, run_id).exists():
            events = await asyncio.to_thread(read_archive, archive_dir, run_id)
            out[run_id] = fold_all(events).status if events else None
    return out


async def existing_runs(
    redis: aioredis.Redis, archive_dir: Path, run_ids: Iterable[str]
) -> list[str]:
    """The ids among ``run_ids`` that a run already has (in Redis or archived)."""
    ids = list(run_ids)
    async with redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.exists(run_log_key(run_id), run_meta_key(run_id))
        counts = await pipe.execute()
    return [
        run_id
        for run_id, count in zip(ids, counts, strict=True)
        if count or archive_path(archive_dir, run_id).exists()
    ]
