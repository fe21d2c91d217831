"""The follower: the process (``LogFollower``) that follows the run logs and keeps the
read models up to date as they grow.

It finds runs in the listing projection (``runs:index``) and in the archive folder,
follows the log of every run that has not ended (one pipelined ``XRANGE`` per poll for
all of them: one key per command, so it works on Redis Cluster too), and projects
finished runs from their archive when Redis no longer holds their log. Each batch of a
run is folded and written with its log position in one transaction; the pages are told
which runs changed (``Notifier``), for their server-sent events.

It looks for new runs every ``discover_s`` (1 s) and reads the logs every ``poll_s``
(0.25 s). A
run's terminal event ends its following; a run marked quarantined in its meta hash, or
whose next entry cannot be decoded or folded, keeps what was projected before and is
shown with the reason (``projection_error``), and the others go on. A restart resumes
where the store says (active runs are refolded from their stored events).

The log only grows, except after a Redis failover (or a restart from an older
snapshot): what the follower read may then be gone, and other events written in its
place. It notices (another server answers its polls, or a fold fails) and projects the
run again from its whole log (``resync``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import redis.asyncio as aioredis

from contreact_bus.archive import archive_path, archived_run_ids
from contreact_bus.replies import entries, text, text_map
from contreact_events.catalog import Event
from contreact_events.config import RUN_ID_PATTERN
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import RUNS_INDEX, run_log_key, run_meta_key
from contreact_events.wire.codec import EVENT_FIELD, bulk, event_from_fields, event_from_json
from contreact_ui.exceptions import ProjectionError
from contreact_ui.projection.rebuild import archive_entries
from contreact_ui.projection.resync import RECHECK_S, moved, read_log, server_id
from contreact_ui.projection.store import ProjectionStore
from contreact_ui.read_models import Delta, Entry, RunProjector

log = logging.getLogger(__name__)

PAGE = 1000
"""Entries read per run and poll (a run that appended more is read on the next poll)."""

QUARANTINED = "quarantined"


@dataclass
class Notifier:
    """In-process signal from the follower to the event streams: which runs changed."""

    generation: int = 0
    changed: dict[str, int] = field(default_factory=dict)
    """run id -> generation of its last change."""
    reset_at: int = 0
    """Generation of the last rebuild (everything changed)."""
    _condition: asyncio.Condition | None = None

    def _cond(self) -> asyncio.Condition:
        if self._condition is None:
            self._condition = asyncio.Condition()
        return self._condition

    async def publish(self, run_ids: Iterable[str], *, everything: bool = False) -> None:
        condition = self._cond()
        async with condition:
            self.generation += 1
            for run_id in run_ids:
                self.changed[run_id] = self.generation
            if everything:
                self.reset_at = self.generation
            condition.notify_all()

    async def wait(self, after: int, within_s: float) -> int:
        """The generation once it passes ``after`` (or the same after ``within_s``)."""
        condition = self._cond()
        async with condition:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within_s):
                    await condition.wait_for(lambda: self.generation > after)
            return self.generation

    def since(self, after: int) -> set[str] | None:
        """Runs changed after generation ``after``; None: everything (a rebuild)."""
        if self.reset_at > after:
            return None
        return {run_id for run_id, gen in self.changed.items() if gen > after}


@dataclass
class FollowedRun:
    """A run whose log is being followed: its fold so far and where it stands."""

    projector: RunProjector
    after: str | None
    """Stream id of the last entry projected (None: from the start)."""
    last_raw: bytes | None = None
    """The stored JSON of that entry (None: not known): another event written under the
    same id after a failover is told from it."""


class LogFollower:
    """Follows every active run; one instance per ui process (the store's one writer)."""

    def __init__(
        self,
        store: ProjectionStore,
        redis: aioredis.Redis | None,
        archive_dir: Path,
        notifier: Notifier,
    ) -> None:
        self.store = store
        self.redis = redis
        self.archive_dir = archive_dir
        self.notifier = notifier
        self.followers: dict[str, FollowedRun] = {}
        self.finished: set[str] = set()
        self._index_score = -math.inf
        self._generation = ""
        self.recent: dict[str, tuple[float, FollowedRun]] = {}
        """Runs that ended here from their Redis log, with when: checked on another
        server for ``RECHECK_S``."""
        self._server: str | None = None
        self._verify = True
        """Check every position before the next poll: at start, after a failed round."""
        self.resyncs = 0
        """Runs projected again from their whole log (``resync``)."""

    async def load(self) -> None:
        """Take up where the store left off: finished runs stay as they are; a run
        still active is refolded from its stored events and followed from there."""
        self.followers.clear()
        self.finished.clear()
        self.recent.clear()
        self._verify, self._server = True, None
        self._index_score = -math.inf
        self._generation = self.store.generation()
        rows = await asyncio.to_thread(self.store.run_rows)
        for run_id, (done, after, _source) in rows.items():
            if done:
                self.finished.add(run_id)
                continue
            try:
                follower = await asyncio.to_thread(self._resume, run_id, after)
            except ProjectionError as exc:
                await self._give_up(run_id, None, str(exc))
                continue
            self.followers[run_id] = follower

    def _resume(self, run_id: str, after: str | None) -> FollowedRun:
        projector = RunProjector(run_id)
        stored = self.store.event_payloads(run_id)
        with bulk():
            pairs = [Entry(entry_id, _decode(run_id, raw), raw) for entry_id, raw in stored]
        projector.feed(pairs)
        return FollowedRun(projector, after, stored[-1][1] if stored and after else None)

    async def run(self, stop: asyncio.Event, *, poll_s: float, discover_s: float) -> None:
        """Discover and poll until ``stop`` is set. A failed round is logged and
        retried: the dashboard outlives a Redis restart."""
        await self.load()
        next_discovery = 0.0
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            try:
                if await asyncio.to_thread(self.store.generation) != self._generation:
                    log.info("the projections were rebuilt by another process: reloading")
                    await self.load()
                    await self.notifier.publish((), everything=True)
                if loop.time() >= next_discovery:
                    await self.discover()
                    next_discovery = loop.time() + discover_s
                await self.poll()
            except (OSError, aioredis.RedisError) as exc:
                log.warning("follower round failed (retrying): %s", exc)
                self._verify = True  # it may come back to another server
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=poll_s)

    async def discover(self) -> None:
        """New runs in ``runs:index`` and in the archive folder; quarantined runs."""
        if self.redis is not None:
            scored = cast(
                list[tuple[bytes, float]],
                await self.redis.zrangebyscore(
                    RUNS_INDEX, self._index_score, "+inf", withscores=True
                ),
            )
            for raw_id, score in scored:
                run_id = text(raw_id)
                self._index_score = max(self._index_score, float(score))
                if self._known(run_id) or not RUN_ID_PATTERN.match(run_id):
                    continue
                self.followers[run_id] = FollowedRun(RunProjector(run_id), None)
            await self._check_quarantine()
        archived = await asyncio.to_thread(archived_run_ids, self.archive_dir)
        for run_id in archived:
            follower = self.followers.get(run_id)
            if run_id in self.finished or not RUN_ID_PATTERN.match(run_id):
                continue
            if follower is not None and await self._in_redis(run_id):
                continue  # still readable in Redis: followed there
            await self._project_archive(run_id, follower)

    async def _in_redis(self, run_id: str) -> bool:
        return self.redis is not None and bool(await self.redis.exists(run_log_key(run_id)))

    async def _check_quarantine(self) -> None:
        assert self.redis is not None
        ids = list(self.followers)
        if not ids:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for run_id in ids:
                pipe.hgetall(run_meta_key(run_id))
            metas = await pipe.execute()
        for run_id, meta in zip(ids, metas, strict=True):
            fields = text_map(meta)
            if fields.get("status") == QUARANTINED:
                reason = fields.get("failure_reason") or "quarantined by the orchestrator"
                await self._give_up(run_id, QUARANTINED, reason)

    async def poll(self) -> None:
        """Read what every followed run appended since the last poll and project it;
        first, when another server answers (or after a failed round), the runs whose
        positions are no longer in their logs are projected again (``resync``)."""
        if self.redis is None:
            return
        self._forget_recent()
        if not self.followers and not self.recent:
            return
        ids = list(self.followers)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.info("server")  # the same connection as the reads: the server they are from
            for run_id in ids:
                after = self.followers[run_id].after
                start = "-" if after is None else f"({after}"
                pipe.xrange(run_log_key(run_id), min=start, max="+", count=PAGE)
            replies = await pipe.execute(raise_on_error=False)
        server, replies = server_id(replies[0]), replies[1:]
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        again: dict[str, str] = {}
        if self._verify or server != self._server:
            again = await self._moved()
            self._server, self._verify = server, False
        changed = []
        for run_id, reply in zip(ids, replies, strict=True):
            page = entries(reply)
            if not page or run_id in again:
                continue
            follower = self.followers[run_id]
            read_from = follower.after
            try:
                done = await asyncio.to_thread(self._project_entries, follower, page)
            except ProjectionError as exc:
                if read_from is None:  # read from its start: this is its log
                    await self._give_up(run_id, None, str(exc))
                else:  # on what was read before, maybe lost: once, from its start
                    again[run_id] = f"a fold failed ({exc})"
                continue
            changed.append(run_id)
            if done:
                self._finish(run_id, ended=True)
        for run_id, why in again.items():
            await self._resync(run_id, why)
        if changed:
            await self.notifier.publish(changed)

    async def _moved(self) -> dict[str, str]:
        """The followed runs, and those ended lately, whose last-read entry is no
        longer in their log as read."""
        assert self.redis is not None
        runs = [(run_id, f) for run_id, (_, f) in self.recent.items()]
        runs += list(self.followers.items())
        positions = {r: (f.after, f.last_raw) for r, f in runs if f.after is not None}
        return await moved(self.redis, positions)

    async def _resync(self, run_id: str, why: str) -> None:
        """Project the run again from its whole log, in place of all it had (a log
        that does not fold is reported, and no longer followed)."""
        assert self.redis is not None
        log.warning("run %s: %s; projecting it again from its log", run_id, why)
        self.resyncs += 1
        self.finished.discard(run_id)
        self.recent.pop(run_id, None)
        follower = self.followers[run_id] = FollowedRun(RunProjector(run_id), None)
        page = await read_log(self.redis, run_id)
        try:
            done = await asyncio.to_thread(self._project_entries, follower, page, replace=True)
        except ProjectionError as exc:
            await self._give_up(run_id, None, str(exc))
            return
        if done:
            self._finish(run_id, ended=True)
        elif not page and await asyncio.to_thread(archive_path(self.archive_dir, run_id).exists):
            await self._project_archive(run_id, None)  # Redis no longer holds it
            return
        await self.notifier.publish([run_id])

    def _project_entries(
        self,
        follower: FollowedRun,
        page: list[tuple[bytes, dict[bytes, bytes]]],
        *,
        replace: bool = False,
    ) -> bool:
        """Project a page of entries; an entry that cannot be decoded stops the run
        there (what came before it is kept) with a ProjectionError naming it. With
        ``replace``, the page is the run's whole log, in place of all it had."""
        run_id = follower.projector.run_id
        key = run_log_key(run_id)
        problem = None
        with bulk():
            pairs = []
            for entry_id, fields in page:
                where = f"{key} entry {entry_id.decode()}"
                try:
                    event = event_from_fields(fields, where=where)
                    raw = fields.get(EVENT_FIELD.encode())
                    pairs.append(Entry(entry_id.decode(), event, raw))
                except ContReActEventError as exc:
                    problem = ProjectionError(f"run {run_id}: {exc}")
                    break
            try:
                delta = follower.projector.feed(pairs)
            except ProjectionError as exc:
                delta, problem = exc.partial, exc
        if replace:
            before, after = self.store.replace_run(run_id, delta, source="redis")
            if before == self._generation:  # else another process rebuilt: reloaded
                self._generation = after
        elif not delta.empty:
            self.store.apply(delta, source="redis")
        if not delta.empty:
            follower.after = delta.last_entry_id
            follower.last_raw = next(
                (p.raw for p in reversed(pairs) if p.entry_id == delta.last_entry_id), None
            )
        if problem is not None:
            raise problem
        return follower.projector.terminal

    async def _project_archive(self, run_id: str, follower: FollowedRun | None) -> None:
        """A run Redis no longer holds (or never did, here): the rest of its log from
        the archive. ``follower`` has projected the first part, if any."""
        projector = follower.projector if follower else RunProjector(run_id)
        try:
            await asyncio.to_thread(self._archive_rest, projector)
        except ProjectionError as exc:
            await self._give_up(run_id, None, str(exc))
            return
        self._finish(run_id)
        await self.notifier.publish([run_id])

    def _archive_rest(self, projector: RunProjector) -> Delta:
        run_id = projector.run_id
        try:
            entries = archive_entries(self.archive_dir, run_id) or []
        except ContReActEventError as exc:
            raise ProjectionError(f"run {run_id}: {exc}") from None
        delta = projector.feed(entries[projector.state.seq :])
        self.store.apply(delta, source="archive")
        return delta

    def _finish(self, run_id: str, *, ended: bool = False) -> None:
        """No longer followed; ``ended``: by its terminal event in its Redis log (then
        checked on another server for a while: ``resync``)."""
        follower = self.followers.pop(run_id, None)
        self.finished.add(run_id)
        if ended and follower is not None:
            self.recent[run_id] = (asyncio.get_running_loop().time(), follower)

    def _forget_recent(self) -> None:
        since = asyncio.get_running_loop().time() - RECHECK_S
        for run_id in [r for r, (at, _) in self.recent.items() if at < since]:
            del self.recent[run_id]

    async def _give_up(self, run_id: str, status: str | None, reason: str) -> None:
        log.warning("run %s is no longer projected: %s", run_id, reason)
        await asyncio.to_thread(self.store.set_problem, run_id, status=status, error=reason)
        self._finish(run_id)
        await self.notifier.publish([run_id])

    def _known(self, run_id: str) -> bool:
        return run_id in self.followers or run_id in self.finished


def _decode(run_id: str, raw: bytes) -> Event:
    try:
        return event_from_json(raw, where=f"stored event of run {run_id}")
    except ContReActEventError as exc:
        raise ProjectionError(f"run {run_id}: {exc}") from None
