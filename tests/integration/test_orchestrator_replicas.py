"""Orchestrator replicas share the inbox shards through leases (real Redis, replicas in
this process; killing replica processes is the fault suite's part)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_events.names import INBOX_SHARDS_KEY, inbox_shard, run_writer_key
from contreact_events.wire.tasks import InboxMessage
from contreact_orchestrator.leases import ShardLeases
from contreact_orchestrator.orchestrator import Orchestrator
from contreact_orchestrator.replica import Replica, ReplicaSettings
from tests.support.sim import make_config
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis

SHARDS = 8
QUICK = ReplicaSettings(
    lease_ttl_s=1.0,
    renew_every_s=0.1,
    orphan_after_s=0.3,
    consumer=ConsumerSettings(block_ms=50, reclaim_idle_ms=500, reclaim_every_s=0.1),
)


class Running:
    def __init__(self, replica: Replica, task: asyncio.Task[None], stop: asyncio.Event) -> None:
        self.replica, self.task, self.stop = replica, task, stop

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, HANG_GUARD_S)


async def start(redis: aioredis.Redis, tmp_path: Path, name: str) -> Running:
    orchestrator = Orchestrator(redis, tmp_path, "1", Inbox(redis, SHARDS))
    replica = Replica(redis, orchestrator, name, QUICK)
    stop = asyncio.Event()
    return Running(replica, asyncio.create_task(replica.run(stop)), stop)


async def until(predicate: Callable[[], bool], within_s: float = HANG_GUARD_S) -> None:
    """Wait for ``predicate``; ``within_s`` only guards a hang (generous: it returns as soon
    as the predicate holds, so a loaded machine only makes it later, never a failure)."""
    deadline = time.monotonic() + within_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.fixture(autouse=True)
async def _eight_shards(aredis: aioredis.Redis) -> None:
    await aredis.set(INBOX_SHARDS_KEY, SHARDS)


async def test_two_replicas_split_the_shards_and_never_share_one(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    a = await start(aredis, tmp_path, "replica-a")
    b = await start(aredis, tmp_path, "replica-b")
    try:
        await until(
            lambda: (
                sorted(a.replica.held + b.replica.held) == list(range(SHARDS))
                and bool(a.replica.held)
                and bool(b.replica.held)
            )
        )
        assert not set(a.replica.held) & set(b.replica.held)
        owners = await ShardLeases(aredis, "x", 1).owners(SHARDS)
        assert {owners[s] for s in a.replica.held} == {"replica-a"}
        assert {owners[s] for s in b.replica.held} == {"replica-b"}
    finally:
        await a.halt()
        await b.halt()
    assert await ShardLeases(aredis, "x", 1).owners(SHARDS) == {}  # handed back on stop


async def test_a_replica_that_joins_gets_its_share_and_one_that_leaves_hands_it_back(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    a = await start(aredis, tmp_path, "replica-a")
    try:
        await until(lambda: a.replica.held == list(range(SHARDS)))
        b = await start(aredis, tmp_path, "replica-b")
        await until(lambda: bool(b.replica.held) and len(a.replica.held) < SHARDS)
        await until(lambda: sorted(a.replica.held + b.replica.held) == list(range(SHARDS)))
        moved = list(b.replica.held)
        await b.halt()
        # Handed back on the way out, not left to expire: no shard names b once halt
        # returns (an order, not a time: a loaded machine cannot make it pass or fail).
        owners = await ShardLeases(aredis, "x", 1).owners(SHARDS)
        assert "replica-b" not in owners.values(), owners
        await until(lambda: a.replica.held == list(range(SHARDS)))
        assert moved
    finally:
        with contextlib.suppress(Exception):
            await a.halt()


async def test_runs_of_a_shard_follow_it_to_its_new_owner(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """A run submitted while replica A owns its shard; A leaves, B takes the shard,
    recovers the run and handles its next input."""
    config = make_config(run_id="follow-me")
    shard = inbox_shard("follow-me", SHARDS)
    a = await start(aredis, tmp_path, "replica-a")
    try:
        await until(lambda: shard in a.replica.held)
        request = {"config": config.model_dump(mode="json")}
        await Inbox(aredis, SHARDS).send(
            InboxMessage(run_id="follow-me", kind="RunRequested", data=request)
        )
        log = RunLog(aredis)
        for _ in range(200):
            if await log.length("follow-me") == 1:
                break
            await asyncio.sleep(0.05)
        assert await log.length("follow-me") == 1
    finally:
        await a.halt()
    b = await start(aredis, tmp_path, "replica-b")
    try:
        await until(lambda: shard in b.replica.held)
        await Inbox(aredis, SHARDS).send(
            InboxMessage(
                run_id="follow-me",
                kind="ModelChecked",
                causation_id="follow-me/check",
                data={"ok": True, "backend": "scripted"},
            )
        )
        for _ in range(200):
            if await log.length("follow-me") > 1:
                break
            await asyncio.sleep(0.05)
        types = [e.type for e in await log.events("follow-me")]
        assert types[:3] == ["RunRequested", "ModelChecked", "RunStarted"]
        fence = await aredis.hget(run_writer_key("follow-me"), "fence")
        assert fence is not None and int(fence) >= 2  # B's token, raised when it took over
    finally:
        await b.halt()
