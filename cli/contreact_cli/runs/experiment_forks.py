"""An experiment's forks (its file's ``fork`` section), sent as their parents get there.

A fork can be asked for only once its parent (the replica's current run) has ended
cycle K, so ``experiment run`` sends each one while it follows the experiment, and a
later ``experiment run FILE`` sends those still due. Each is recorded in the
experiment's record with its request, in one round trip (a replica named
``{parent replica}-to-{label}``), so status, cancel and export see it as any run. A
fork the orchestrator refuses is taken out of the record again, with its reason, and
not asked for again by this process (a refusal such as "run ... exists" would be
repeated for ever); the next ``experiment run FILE`` asks again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from contreact_bus.experiments import ReplicaEntry, queue_entry, replica_entries
from contreact_bus.forks import queue_fork, refusal
from contreact_bus.replies import text
from contreact_bus.streams.inbox import Inbox
from contreact_events.core.state import RESTING_STATUSES
from contreact_events.history.experiment_forks import PlannedFork
from contreact_events.names import experiment_replicas_key, run_meta_key
from contreact_events.wire.tasks import ForkRequest

GOING = frozenset({"running", "waiting_operator", *RESTING_STATUSES})


@dataclass
class ForkSender:
    """The forks of one experiment still to send, and those sent by this process."""

    experiment: str
    forks: Sequence[PlannedFork]
    sent: dict[str, tuple[str, str]] = field(default_factory=dict)
    """replica -> (run id, request id) of each fork sent here."""
    given_up: set[str] = field(default_factory=set)
    """Replicas whose fork the orchestrator refused: not sent again by this process."""

    async def send_ready(self, redis: aioredis.Redis) -> list[str]:
        """Send every fork whose parent has ended the fork's cycle; their run ids."""
        entries = await replica_entries(redis, self.experiment)
        due = [
            f
            for f in {f.replica: f for f in self.forks}.values()
            if f.replica not in entries
            and f.replica not in self.given_up
            and f.parent.replica in entries
        ]
        if not due:
            return []
        parents = [entries[f.parent.replica].run_id for f in due]
        async with redis.pipeline(transaction=False) as pipe:
            for run_id in parents:
                pipe.hmget(run_meta_key(run_id), ["status", "cycle"])
            metas = await pipe.execute()
        inbox = await Inbox.open(redis)
        sent = []
        async with redis.pipeline(transaction=False) as pipe:
            for fork, parent, (status, cycle) in zip(due, parents, metas, strict=True):
                if not _reached(text(status) if status else None, cycle, fork.at_cycle):
                    continue
                child = fork.run_id(parent)
                request = ForkRequest(
                    parent_run_id=parent,
                    at_cycle=fork.at_cycle,
                    model=fork.model_name,
                    settings=fork.settings,
                )
                queue_entry(pipe, self.experiment, _entry(fork, child))
                message = queue_fork(pipe, inbox, child, request)
                self.sent[fork.replica] = (child, message.msg_id)
                sent.append(child)
            await pipe.execute()
        return sent

    async def refused(self, redis: aioredis.Redis) -> dict[str, str]:
        """Forks sent here that the orchestrator refused (run id -> why), taken out of
        the record so that the next ``experiment run FILE`` asks again."""
        out = {}
        for replica, (child, msg_id) in list(self.sent.items()):
            reason = await refusal(redis, child, msg_id)
            if reason is None:
                continue
            await redis.hdel(experiment_replicas_key(self.experiment), replica)
            del self.sent[replica]
            self.given_up.add(replica)
            out[child] = reason
        return out


def _reached(status: str | None, cycle: bytes | None, at_cycle: int) -> bool:
    """The parent has ended cycle ``at_cycle``: it completed past it, or goes on after it."""
    if status is None or cycle is None:
        return False
    number = int(text(cycle) or 0)
    return (status == "completed" and number >= at_cycle) or (status in GOING and number > at_cycle)


def _entry(fork: PlannedFork, child: str) -> ReplicaEntry:
    return ReplicaEntry(
        replica=fork.replica,
        label=f"{fork.parent.label}-to-{fork.label}",
        letter=fork.parent.letter,
        model=fork.model_name,
        run_id=child,
        attempt=1,
        config_sha256=fork.config_sha256,
    )
