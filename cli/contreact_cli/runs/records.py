"""Reading runs: the listing (Redis, plus archived runs), a run's meta hash, a run's
events and state, and every run's events with the unreadable ones set aside."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import archived_run_ids, read_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.replies import text_map
from contreact_bus.runs import list_runs, load_events
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.run_summary import RunListing, run_summary
from contreact_events.names import run_meta_key

UNREADABLE_STATUS = "unreadable"
"""The status of a run whose log cannot be read (the dashboard's word too)."""
QUARANTINED = "quarantined"
"""The status the orchestrator gives a run it set aside (its log cannot be read, or an
input of it could not be decided); the reason is in the meta hash's failure_reason."""


async def runs(settings: CLISettings) -> list[RunListing]:
    """Every run: Redis's listing, then the archived runs Redis no longer lists (folded
    from their archive, so they are listed as any other; one whose archive cannot be
    read is listed ``unreadable`` with the reason, as the dashboard lists it)."""
    async with redis_client(settings) as redis:
        rows = await list_runs(redis)
    known = {row.run_id for row in rows}
    for run_id in archived_run_ids(settings.archive_dir):
        if run_id not in known:
            rows.append(await asyncio.to_thread(_archived_listing, settings, run_id))
    return rows


def _archived_listing(settings: CLISettings, run_id: str) -> RunListing:
    try:
        events = read_archive(settings.archive_dir, run_id)
        if events:
            return run_summary(fold_all(events)).listing()
        reason = "its archive holds no event"
    except UNREADABLE as exc:
        reason = str(exc) or type(exc).__name__
    fields = {"run_id": run_id, "status": UNREADABLE_STATUS, "failure_reason": reason}
    return RunListing.from_hash(fields)


async def run_meta(redis: aioredis.Redis, run_id: str) -> dict[str, str]:
    """The run's listing hash; a quarantined run is refused at once, with its reason
    (the orchestrator ignores its inputs: waiting for an answer would be in vain)."""
    meta = text_map(await redis.hgetall(run_meta_key(run_id)))
    if not meta:
        raise CLIError(f"no run '{run_id}' in Redis (see `contreact runs`)")
    if meta.get("status") == QUARANTINED:
        reason = safe(meta.get("failure_reason") or "no reason recorded", 300, one_line=True)
        raise CLIError(
            f"run {run_id} is quarantined ({reason}): the orchestrator ignores its messages "
            "until it is restarted with the cause fixed (`contreact down` and `contreact up`, "
            "or restart its container)"
        )
    return meta


async def load_run_events(settings: CLISettings, run_id: str) -> list[Event]:
    """The run's events, from Redis or, once it left Redis, from the archive."""
    redis = await optional_redis(settings)
    try:
        return await load_events(redis, settings.archive_dir, run_id)
    finally:
        if redis is not None:
            await redis.aclose()


async def load_state(settings: CLISettings, run_id: str) -> tuple[list[Any], AgentState]:
    events = await load_run_events(settings, run_id)
    return events, fold_all(events)


SKIPPED_EXIT = 3
"""Exit code of a command over many runs that did its work for every readable run but
skipped some (named on stderr): not a failure of the runs read, not a clean success."""

UNREADABLE = (ContReActEventError, RunNotFound, OSError)
"""Why one run's log may not be read while the others can: a corrupt entry, an event
from newer code, a log gone from Redis and the archive, an archive file not readable."""


async def events_or_skip(
    redis: aioredis.Redis | None, settings: CLISettings, run_id: str, skipped: dict[str, str]
) -> list[Event] | None:
    """The run's events; None, with the reason put in ``skipped``, when its log cannot
    be read (a command over every run goes on with the others)."""
    try:
        return await load_events(redis, settings.archive_dir, run_id)
    except UNREADABLE as exc:
        skipped[run_id] = str(exc) or type(exc).__name__
        return None


def skipped_line(run_id: str, reason: str) -> str:
    """The warning for a run left out because its log cannot be read."""
    return f"skipped run {run_id}: its log cannot be read ({safe(reason, 300, one_line=True)})"
