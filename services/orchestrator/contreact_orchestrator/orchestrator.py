"""The orchestrator's shell around the pure core: read inbox → fold → decide → append
to the run log → enqueue tasks → ack (the ack is ``serve``'s, after return).

It acts only for runs of the inbox shards it holds a lease on, and every append
carries the lease's fencing token and the log length it expects: a write that Redis
refuses (a newer owner, or a log that moved) or whose outcome is unknown drops the
held state, which is refolded from the log. The run log is the outbox: events are
appended first, tasks sent after; a new owner of a shard sends again the pending
tasks that are nowhere to be found. One run that cannot be read or decided is
quarantined with its reason; the others go on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.backoff import REDIS_DOWN, Backoff
from contreact_bus.exceptions import FencedOut, LogMoved
from contreact_bus.failover.durability import NO_WAIT, Durability
from contreact_bus.run_log import RunLog, append_result
from contreact_bus.runs import active_run_ids, meta_fields, register_run
from contreact_bus.streams.inbox import Inbox
from contreact_bus.traces import RunTraces
from contreact_events.catalog import Event
from contreact_events.core.decide import ANSWERED_IN, Decision, Task, decide
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.state import AgentState
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import (
    ACTIVE_RUNS,
    inbox_shard,
    inbox_stream,
    run_meta_key,
)
from contreact_events.wire.tasks import DIGEST_REQUEST, FORK_REQUEST, InboxMessage
from contreact_orchestrator.archiving import Archiver, listed_state
from contreact_orchestrator.deadlines import DeadlineWatch
from contreact_orchestrator.digests import write_digest
from contreact_orchestrator.exceptions import LeaseLost
from contreact_orchestrator.leases import Lease
from contreact_orchestrator.rejections import FORGED_FORK, keep_refused, rejection
from contreact_orchestrator.run_requests import completed_request, decide_fork
from contreact_orchestrator.task_sender import TaskSender, pending_of

log = logging.getLogger(__name__)

QUARANTINED = "quarantined"
"""Listing status of a run the orchestrator cannot read or decide (reason beside it)."""
MAX_REFOLDS = 5
"""Refolds of one input in a row (its log moved under it) before it is let go."""
RESULT_KINDS = frozenset({*ANSWERED_IN, "OperatorMessageAnalyzed"})
"""Worker results: one the core cannot accept, for a task it waits on, is its failure."""


class Orchestrator:
    """Drives every run of the shards it holds; the only writer of their logs."""

    def __init__(
        self,
        redis: aioredis.Redis,
        archive_dir: Path,
        version: str,
        inbox: Inbox,
        *,
        log_retention_s: float = 3600.0,
        traces: RunTraces | None = None,
        durability: Durability = NO_WAIT,
    ) -> None:
        self._redis = redis
        self._durability = durability
        self._archive_dir = archive_dir
        self._version = version
        self._inbox = inbox
        self._archiver = Archiver(redis, archive_dir, log_retention_s)
        self._log = RunLog(redis)
        self._sender = TaskSender(redis)
        self._states: dict[str, AgentState] = {}
        self._meta: dict[str, dict[str, str]] = {}
        """The meta hash last written per run: written again only when it changes."""
        self._leases: dict[int, Lease] = {}
        self.quarantined: dict[str, str] = {}
        self._unsure: set[str] = set()
        """Runs whose last write's outcome is unknown: resend their tasks once refolded."""
        self._deadlines = DeadlineWatch()
        self._traces = traces  # the run logs as OpenTelemetry spans (None: no endpoint set)

    @property
    def shards(self) -> int:
        return self._inbox.shards

    @property
    def inbox(self) -> Inbox:
        return self._inbox

    def shard_of(self, run_id: str) -> int:
        return inbox_shard(run_id, self.shards)

    def owns(self, shard: int) -> bool:
        lease = self._leases.get(shard)
        return lease is not None and lease.valid()

    def held_runs(self) -> list[str]:
        return sorted(self._states)

    def unarchived_runs(self) -> list[str]:
        """Finished runs whose archive write failed (tried again by ``retry_archives``)."""
        return sorted(self._archiver.failing)

    # -- shards ------------------------------------------------------------------

    async def take_shard(self, lease: Lease) -> int:
        """Become the writer of the shard's runs: fold each active one (quarantining
        what cannot be read), raise its fence to the lease's token, and send its
        pending task again where it is neither queued nor answered. Returns how many
        tasks were sent."""
        self._leases[lease.shard] = lease
        states: list[AgentState] = []
        for run_id in await active_run_ids(self._redis):
            if self.shard_of(run_id) != lease.shard:
                continue
            state = await self._recover_run(run_id)
            if state is not None:
                states.append(state)
        for state in states:
            claimed = await self._log.claim(state.run_id, lease.token, pending_of(state))
            if not claimed:
                self.drop_shard(lease.shard)
                raise FencedOut(f"run {state.run_id} is written by a newer owner of its shard")
            self._states[state.run_id] = state
        await self._write_meta(states)
        sent = await self._resend_missing(states, lease.shard)
        log.info(
            "shard %d (token %d): %d active run(s), %d task(s) sent again",
            lease.shard,
            lease.token,
            len(states),
            sent,
        )
        return sent

    def drop_shard(self, shard: int) -> None:
        self._leases.pop(shard, None)  # another replica owns its runs now: forget them
        for run_id in [r for r in self._states if self.shard_of(r) == shard]:
            self._forget(run_id)
        for run_id in [r for r in self._archiver.failing if self.shard_of(r) == shard]:
            self._archiver.forget(run_id)  # the shard's next owner archives it on recovery

    async def _write_meta(self, states: Sequence[AgentState]) -> None:
        """The listing hash of every run taken over, now: a run quarantined before a restart
        that can be read again stops saying so at once (reply and cancel refuse it)."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for state in states:
                meta: dict[Any, Any] = meta_fields(state)
                self._meta[state.run_id] = meta
                pipe.hset(run_meta_key(state.run_id), mapping=meta)
            await pipe.execute()

    async def _recover_run(self, run_id: str) -> AgentState | None:
        try:
            events = await self._log.events(run_id)
            state = fold_all(events) if events else None
            if self._traces is not None:
                self._traces.seen(events)
        except REDIS_DOWN:
            raise
        except Exception as exc:
            await self._quarantine(run_id, f"its log cannot be read: {exc}")
            return None
        if state is None:
            await self._redis.srem(ACTIVE_RUNS, run_id)
            return None
        if state.terminal:  # ended, but not archived yet (else not active): archive it
            await self._finish(state)
            return None
        self.quarantined.pop(run_id, None)
        return state

    async def _resend_missing(self, states: Sequence[AgentState], shard: int) -> int:
        """The outbox rule: a task whose events are logged but that is in no task
        stream and has no answer waiting in the inbox is sent again."""
        wanted = [task for state in states for task in pending_tasks(state)]
        if not wanted:
            return 0
        missing = await self._sender.missing(wanted, inbox_stream(shard))
        if missing:
            await self._durability.sync(self._redis)
        await self._sender.send(missing)
        return len(missing)

    # -- inputs ------------------------------------------------------------------

    async def handle(self, message: InboxMessage) -> None:
        """Decide one inbox message for a run of a held shard and write the outcome.
        Redis going away mid-write is waited out and the message decided again."""
        shard = self.shard_of(message.run_id)
        backoff = Backoff(f"orchestrator shard {shard}")
        moved = 0
        while True:
            if not self.owns(shard):
                raise LeaseLost(f"shard {shard} is not held (run {message.run_id})")
            try:
                await self._handle(message, self._leases[shard])
                return
            except LogMoved as exc:
                moved += 1
                self._forget(message.run_id)
                if moved > MAX_REFOLDS:  # another writer keeps appending: not ours to race
                    raise LeaseLost(f"run {message.run_id}: {exc}, {moved} times") from None
                log.warning("run %s: %s; refolding", message.run_id, exc)
            except FencedOut as exc:
                log.error("shard %d: %s; giving it up", shard, exc)
                self.drop_shard(shard)
                raise LeaseLost(str(exc)) from None
            except REDIS_DOWN as exc:
                # The write may or may not have happened: refold, and send the run's
                # pending task again once the log tells what it is.
                self._forget(message.run_id)
                self._unsure.add(message.run_id)
                await backoff.wait(exc)

    async def _handle(self, message: InboxMessage, lease: Lease) -> None:
        run_id = message.run_id
        if message.kind == DIGEST_REQUEST:
            await self._answer_digest(run_id)
            return
        if message.kind == FORK_REQUEST:
            await self._fork(message, lease)
            return
        if message.kind == "RunForked":  # only ever built here, from a fork request
            await keep_refused(self._redis, message, FORGED_FORK)
            return
        state = await self._state(run_id)
        if state is None:
            log.warning("run %s is quarantined: %s ignored", run_id, message.kind)
            return
        if run_id in self._unsure:
            await self._durability.sync(self._redis)  # (the refolded log may be unreplicated)
            await self._sender.send(pending_tasks(state))
            self._unsure.discard(run_id)
        if message.kind == "RunRequested":
            message = completed_request(message, self._version)
        decision = await self._decide(state, message)
        if decision is None:
            return
        if decision.ignored is not None:
            log.info("run %s: ignored %s: %s", run_id, message.kind, decision.ignored)
            return
        await self._commit(state, decision, lease.token)

    async def _fork(self, message: InboxMessage, lease: Lease) -> None:
        """A fork request (see ``forks``): the child's first append, expected length 0."""
        state = await self._state(message.run_id)
        decided = await decide_fork(
            self._redis, self._archive_dir, message, state, version=self._version
        )
        if decided is not None:
            prefix, decision = decided
            await self._commit(AgentState(run_id=message.run_id), decision, lease.token, prefix)

    async def _decide(self, state: AgentState, message: InboxMessage) -> Decision | None:
        """``decide``. A result of the pending task that the core cannot accept (a
        corrupt payload, a vector of the wrong size) becomes the task's failure, and
        the message is kept in the dead letters; any other input the core cannot
        decide quarantines the run. An input that is not an event at all raises
        ``CorruptEvent`` (dead-lettered by ``serve``)."""
        now = datetime.now(UTC)
        awaited = {state.pending_task_id, *(t.task_id for t in state.open_tasks)} - {None}
        ours = message.kind in RESULT_KINDS and message.causation_id in awaited
        try:
            event = message.to_event(now)
        except ContReActEventError as exc:
            if not ours:
                raise
            return await self._reject(state, message, now, f"{type(exc).__name__}: {exc}")
        try:
            return decide(state, event)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if ours:
            return await self._reject(state, message, now, problem)
        await self._quarantine(state.run_id, f"{message.kind} could not be decided ({problem})")
        return None

    async def _reject(
        self, state: AgentState, message: InboxMessage, now: datetime, problem: str
    ) -> Decision | None:
        reason = f"its {message.kind} could not be accepted ({problem})"
        failure = rejection(state, message, now, reason)
        await keep_refused(self._redis, message, reason)
        try:
            return decide(state, failure)
        except Exception as exc:
            await self._quarantine(state.run_id, f"TaskFailed could not be decided ({exc})")
            return None

    async def _commit(
        self, before: AgentState, decision: Decision, fence: int, prefix: Sequence[Event] = ()
    ) -> None:
        """Write the decision (after ``prefix``: a fork's copied events) and hold its state."""
        state = decision.state
        if before.phase == "new":
            experiment = state.config.experiment if state.config else None
            await register_run(self._redis, state.run_id, experiment)
        await self._write(before, state, [*prefix, *decision.events], decision.tasks, fence)
        self._states[state.run_id] = state
        if state.terminal:
            await self._finish(state)

    async def _write(
        self,
        before: AgentState,
        state: AgentState,
        events: Sequence[Event],
        tasks: Sequence[Task],
        fence: int,
    ) -> None:
        """One round trip: the checked append (events, the task they call for, the
        listing hash if it changed), then the tasks; if the append is refused, the tasks
        still go out and workers drop them (no recorded task matches). A finished run stays
        active until ``_finish`` has archived it. With ``durability``, the tasks go in a
        second round trip once the append's ``WAIT`` says the replicas hold it."""
        meta = meta_fields(state)
        changed = meta != self._meta.get(state.run_id)
        pending = self._sender.recorded(state, tasks)
        async with self._redis.pipeline(transaction=False) as pipe:
            RunLog.queue_append(
                pipe,
                state.run_id,
                events,
                fence=fence,
                expected=before.seq,
                pending=pending,
                meta=meta if changed else None,
            )
            if self._durability.waits:
                self._durability.queue_wait(pipe)
            else:
                for task in tasks:  # (the cycle's first: its bytes are reused, not encoded)
                    self._sender.queue(pipe, task)
            results = await pipe.execute(raise_on_error=False)
        append_result(results[0])
        self._meta[state.run_id] = meta
        if self._durability.waits:
            self._durability.check(results[1])  # short of its replicas: an unsure write
        if self._traces is not None:
            self._traces.written(events)
        failed = [r for r in results[1:] if isinstance(r, BaseException)]
        if self._durability.waits:
            await self._sender.send(tasks)  # (fails as Redis down: an unsure write)
        elif failed:
            log.error("run %s: logged, but sending its task failed (%s)", state.run_id, failed[0])
            self._unsure.add(state.run_id)

    async def retry_archives(self, now: float | None = None) -> int:
        """Write again the archives that failed and whose wait is over (``now``:
        ``time.monotonic()``). Returns how many runs got archived."""
        return await self._archiver.retry_due(now)

    async def expire_overdue(self, now: datetime | None = None) -> int:
        """Report every held run's wait that passed its deadline as ``TaskFailed``
        (through the run's inbox shard, in order with its other inputs). Returns how
        many were reported."""
        owned = {
            run_id: state
            for run_id, state in self._states.items()
            if self.owns(self.shard_of(run_id))
        }
        failures = self._deadlines.overdue(owned, now or datetime.now(UTC))
        for failure in failures:
            await self._inbox.send(failure)
        return len(failures)

    # -- state -------------------------------------------------------------------

    async def _state(self, run_id: str) -> AgentState | None:
        """The held state, else folded from its log (or archive). None if quarantined."""
        state = self._states.get(run_id)
        if state is not None:
            return state
        if run_id in self.quarantined:
            return None
        try:
            events = await self._log.events(run_id)
            if not events:
                archived = await asyncio.to_thread(read_archive, self._archive_dir, run_id)
                return (
                    fold_all(archived)
                    if archived
                    else await listed_state(self._redis, run_id, self._archive_dir)
                )
            state = fold_all(events)
            if self._traces is not None:
                self._traces.seen(events)
        except REDIS_DOWN:
            raise
        except Exception as exc:
            await self._quarantine(run_id, f"its log cannot be read: {exc}")
            return None
        if not state.terminal:
            self._states[run_id] = state
        return state

    def _forget(self, run_id: str) -> None:
        self._states.pop(run_id, None)
        self._meta.pop(run_id, None)
        self._sender.forget(run_id)

    async def _quarantine(self, run_id: str, reason: str) -> None:
        log.error("run %s quarantined: %s", run_id, reason)
        self._forget(run_id)
        self.quarantined[run_id] = reason
        await self._redis.hset(
            run_meta_key(run_id),
            mapping={"run_id": run_id, "status": QUARANTINED, "failure_reason": reason[:2000]},
        )

    async def _finish(self, state: AgentState) -> None:
        """Archive the finished run (see ``archiving``): its log to disk, its final
        digest to the listing, then out of the active set, its Redis keys expiring
        after the retention. A failed write stays active and is tried again."""
        path = await self._archiver.archive(state)
        self._forget(state.run_id)
        if path is not None:
            log.info("run %s %s; archived to %s", state.run_id, state.status, path)

    async def _answer_digest(self, run_id: str) -> None:
        held = self._states.get(run_id)
        state = held or await self._state(run_id)
        if state is not None:
            await write_digest(self._redis, state, "memory" if held is not None else "log")
