"""Shard leases: which orchestrator replica owns which inbox shard, with fencing tokens.

A lease is one key per shard holding ``"{replica} {token}"`` with a TTL its owner
renews. Taking a free lease takes the next number of the shard's fencing counter
(Kleppmann's fencing tokens; a Kafka group generation): the run log refuses writes
with a lower token than the highest that wrote it, so a replica that lost its lease
(paused, cut off) can never write again. Both keys share a hash tag: each script
touches one Cluster slot.

Replicas register in a sorted set scored by when their registration lapses; the
owner each shard should have is chosen by rendezvous hashing over the live replicas,
so a replica joining or leaving moves only its share of the shards.

The inbox is sharded by CRC-32 of the run id modulo the deployment's shard count
(``orchestrator:shards``, set once by the first orchestrator; a replica configured
otherwise refuses to start). A free shard its preferred replica has not taken within
``orphan_after_s`` (two renewals) is taken by any replica; a replica serves only shards
whose lease it renewed less than a TTL ago, and a lost lease stops the shard at once.
Taking a shard, a replica claims every pending entry of its inbox, folds each active
run, raises each run's fence to its token (a stale owner is refused from then on, even
before the new one writes) and sends again only the pending tasks that are in no task
stream and have no answer waiting in the inbox. Gap, documented: a run created by a
stale owner in the instant before it notices has no fence yet; the position check
still keeps its log whole.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from contreact_bus.replies import text, texts
from contreact_events.names import ORCHESTRATOR_REPLICAS, shard_fence_key, shard_lease_key

ACQUIRE_SCRIPT = """
local current = redis.call('GET', KEYS[1])
if current then
  local owner, token = string.match(current, '^(%S+) (%d+)$')
  if owner == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(token)
  end
  return false
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return token
"""
"""Take a free lease (with the shard's next fencing token), or extend one's own."""

RENEW_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE_SCRIPT = """
local current = redis.call('GET', KEYS[1])
if current and string.match(current, '^(%S+) ') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
"""Drop the lease if ``ARGV[1]`` owns it (any token): a graceful stop, or a supervisor
releasing the leases of a replica it saw die."""


@dataclass
class Lease:
    shard: int
    token: int
    renewed_at: float
    ttl_s: float
    lost: bool = field(default=False)

    def valid(self, now: float | None = None, margin_s: float = 0.5) -> bool:
        """Still ours for certain: renewed less than a TTL (minus a margin) ago."""
        now = time.monotonic() if now is None else now
        return not self.lost and now < self.renewed_at + self.ttl_s - margin_s


class ShardLeases:
    """One replica's view of the leases: acquire, renew, release; the registry."""

    def __init__(self, redis: aioredis.Redis, owner: str, ttl_s: float) -> None:
        self._redis = redis
        self.owner = owner
        self.ttl_s = ttl_s

    @property
    def _ttl_ms(self) -> int:
        return int(self.ttl_s * 1000)

    async def acquire(self, shard: int) -> Lease | None:
        started = time.monotonic()
        token = await self._redis.eval(
            ACQUIRE_SCRIPT, 2, shard_lease_key(shard), shard_fence_key(shard), self.owner,
            self._ttl_ms,
        )  # fmt: skip
        if token is None:
            return None
        return Lease(shard, int(token), started, self.ttl_s)

    async def renew(self, leases: Sequence[Lease]) -> list[Lease]:
        """Renew every lease in one round trip; return the ones that were lost."""
        if not leases:
            return []
        started = time.monotonic()
        async with self._redis.pipeline(transaction=False) as pipe:
            for lease in leases:
                pipe.eval(
                    RENEW_SCRIPT, 1, shard_lease_key(lease.shard),
                    f"{self.owner} {lease.token}", self._ttl_ms,
                )  # fmt: skip
            results = await pipe.execute()
        lost = []
        for lease, renewed in zip(leases, results, strict=True):
            if renewed:
                lease.renewed_at = started
            else:
                lease.lost = True
                lost.append(lease)
        return lost

    async def release(self, shards: Iterable[int]) -> None:
        await release_owner(self._redis, self.owner, shards)

    async def owners(self, shards: int) -> dict[int, str]:
        """Shard -> owning replica, for the shards that have an owner now."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for shard in range(shards):
                pipe.get(shard_lease_key(shard))
            values = await pipe.execute()
        return {
            shard: text(value).split(" ", 1)[0]
            for shard, value in enumerate(values)
            if value is not None
        }

    async def register(self) -> list[str]:
        """Say this replica is alive (for a TTL); return every live replica, sorted."""
        now = time.time()
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zadd(ORCHESTRATOR_REPLICAS, {self.owner: now + self.ttl_s})
            pipe.zremrangebyscore(ORCHESTRATOR_REPLICAS, "-inf", now)
            pipe.zrange(ORCHESTRATOR_REPLICAS, 0, -1)
            *_, members = await pipe.execute()
        return sorted(texts(members))

    async def unregister(self) -> None:
        await self._redis.zrem(ORCHESTRATOR_REPLICAS, self.owner)


async def release_owner(redis: aioredis.Redis, owner: str, shards: Iterable[int]) -> None:
    """Drop every lease ``owner`` holds among ``shards`` and its registration."""
    async with redis.pipeline(transaction=False) as pipe:
        for shard in shards:
            pipe.eval(RELEASE_SCRIPT, 1, shard_lease_key(shard), owner)
        pipe.zrem(ORCHESTRATOR_REPLICAS, owner)
        await pipe.execute()


def preferred_owner(shard: int, replicas: Sequence[str]) -> str | None:
    """Rendezvous hashing: the replica with the highest hash of (shard, replica)."""
    if not replicas:
        return None
    return max(replicas, key=lambda r: hashlib.sha1(f"{shard}:{r}".encode()).digest())
