"""Where the runs' events come from: Redis while a run's log is there, its archive file
once it has left (``contreact_bus.runs.load_events``, the reader every command uses).
An experiment's runs are the ones Redis lists for it (``experiment:{NAME}:runs``) and,
without Redis or for runs it no longer lists, the archives whose config names it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import redis.asyncio as aioredis

from contreact_analysis.exceptions import NoRuns, UnreadableRun
from contreact_analysis.frames.run_rows import run_rows
from contreact_analysis.frames.tables import RunFrames, frames_from_rows
from contreact_bus.archive import archived_experiment
from contreact_bus.exceptions import RunNotFound
from contreact_bus.runs import experiment_run_ids, load_events
from contreact_events.catalog import Event
from contreact_events.exceptions import ContReActEventError
from contreact_events.wire.codec import bulk


async def experiment_runs(
    redis: aioredis.Redis | None, archive_dir: Path, experiment: str
) -> list[str]:
    """Every run of ``experiment``, from Redis's index and the archive folder."""
    listed = await experiment_run_ids(redis, experiment) if redis is not None else []
    runs = sorted({*listed, *archived_experiment(archive_dir, experiment)})
    if not runs:
        where = (
            f"Redis or {archive_dir}" if redis is not None else f"{archive_dir} (Redis is not up)"
        )
        raise NoRuns(
            f"no run of experiment '{experiment}' in {where}: check the name "
            "(`contreact experiment status NAME`) or the archive folder"
        )
    return runs


async def load_log(redis: aioredis.Redis | None, archive_dir: Path, run_id: str) -> list[Event]:
    """One run's events. UnreadableRun names a run whose log is missing or cannot be
    decoded."""
    try:
        return await load_events(redis, archive_dir, run_id)
    except RunNotFound as exc:
        raise UnreadableRun(str(exc)) from None
    except (ContReActEventError, OSError) as exc:
        raise UnreadableRun(f"run {run_id}: its log cannot be read ({exc})") from None


async def load_logs(
    redis: aioredis.Redis | None, archive_dir: Path, run_ids: Sequence[str]
) -> dict[str, list[Event]]:
    """Each run's events, in the order given (every log held at once: for many runs,
    ``collect_frames`` reads and folds one at a time)."""
    return {run_id: await load_log(redis, archive_dir, run_id) for run_id in dict.fromkeys(run_ids)}


async def collect_frames(
    redis: aioredis.Redis | None,
    archive_dir: Path,
    *,
    run_ids: Sequence[str] = (),
    experiment: str | None = None,
    inherited: bool = False,
    skipped: dict[str, str] | None = None,
) -> RunFrames:
    """The tables of the runs named, or of every run of ``experiment`` (a fork's own
    cycles, or with ``inherited`` those it copied too). Each run is read and folded
    into its rows before the next is read, so only one log is held at a time; the
    cyclic garbage collector pauses while rows are made (``bulk``: events, states and
    rows hold no reference cycles). With ``skipped``, a run of the experiment whose log
    cannot be read is left out and named there (run id -> why); a run named, or any run
    without ``skipped``, raises ``UnreadableRun``."""
    if bool(run_ids) == bool(experiment):
        raise NoRuns("name runs or one experiment (not both, not neither)")
    ids = list(run_ids) if run_ids else await experiment_runs(redis, archive_dir, str(experiment))
    rows = []
    for run_id in dict.fromkeys(ids):
        try:
            events = await load_log(redis, archive_dir, run_id)
        except UnreadableRun as exc:
            if skipped is None or run_ids:
                raise
            reason, said = str(exc), f"run {run_id}: its log cannot be read ("
            skipped[run_id] = reason[len(said) : -1] if reason.startswith(said) else reason
            continue
        with bulk():
            rows.append(run_rows(run_id, events, inherited=inherited))
    with bulk():
        return frames_from_rows(rows)
