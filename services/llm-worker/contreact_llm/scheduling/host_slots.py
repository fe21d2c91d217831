"""Call slots per (host, model), shared by every LLM worker through Redis.

A host serves at most ``parallel`` calls of one model at once (Ollama's
``OLLAMA_NUM_PARALLEL``) and holds at most ``max_loaded`` models (``OLLAMA_MAX_LOADED_MODELS``;
0: no limit, as for a hosted API). A call holds a lease: a member of the host's
sorted set scored by its expiry, renewed while the call runs. A worker that dies
stops renewing, and its slots come back when the leases expire.

The host's loaded models are tracked as the workers' calls make them: a call for a
model the host does not hold loads it, into free room, else in place of an idle
model the caller says nobody wants (no call of it waits and none of its runs is still
going: a run between two steps keeps its model), idle for at least ``keep_warm``. A
model that must make room for one waiting too long is ``draining``: it takes no new
calls, and is swapped out once its last call ends.

Every decision is one Lua script on the host's keys (one hash tag, so valid on
Redis Cluster), with the server's clock: the workers' clocks never matter.

A lease is renewed every third of ``lease_ttl_s``. Limits come from
``CONTREACT_LLM_HOSTS`` (JSON, the same for every worker), else the backend's defaults
(the worker's settings): Ollama's own (1 parallel, 3 loaded), OpenAI-compatible 8
parallel, scripted 64, embedded 1 per process (counted in process: each worker has its
own copy of that model).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from contreact_bus.replies import text, text_map
from contreact_events.names import (
    llm_host_draining_key,
    llm_host_leases_key,
    llm_host_loaded_key,
)

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

ACQUIRE_SCRIPT = (
    _NOW
    + """
local leases, loaded, draining = KEYS[1], KEYS[2], KEYS[3]
local model, ids = ARGV[1], ARGV[2]
local ttl, parallel, max_loaded = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local keep_warm, drain_ms, may_drain = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8] == '1'
local protect = {}
for i = 9, #ARGV do protect[ARGV[i]] = true end
redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
local inflight = {}
for _, held in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  local name = string.match(held, '^(.*)\\n')
  inflight[name] = (inflight[name] or 0) + 1
end
local drains, draining_any = {}, false
local flat = redis.call('HGETALL', draining)
for i = 1, #flat, 2 do
  if tonumber(flat[i + 1]) > now then
    drains[flat[i]] = true
    draining_any = true
  else
    redis.call('HDEL', draining, flat[i])
  end
end
if drains[model] then return {0, 'draining'} end
local room = parallel - (inflight[model] or 0)
if room <= 0 then return {0, 'full'} end
local function take(how)
  local granted = 0
  for id in string.gmatch(ids, '%S+') do
    if granted >= room then break end
    redis.call('ZADD', leases, now + ttl, model .. '\\n' .. id)
    granted = granted + 1
  end
  redis.call('HSET', loaded, model, now)
  return {granted, how}
end
if max_loaded <= 0 or redis.call('HEXISTS', loaded, model) == 1 then return take('loaded') end
local held = redis.call('HGETALL', loaded)
if #held / 2 < max_loaded then return take('load') end
local victim, oldest = nil, nil
for i = 1, #held, 2 do
  local name, used = held[i], tonumber(held[i + 1])
  local idle = (inflight[name] or 0) == 0
  local evictable = drains[name] or ((not protect[name]) and used + keep_warm <= now)
  if idle and evictable and (oldest == nil or used < oldest) then victim, oldest = name, used end
end
if victim then
  redis.call('HDEL', loaded, victim)
  redis.call('HDEL', draining, victim)
  return take('swap:' .. victim)
end
if may_drain and not draining_any then
  local lru, lru_used = nil, nil
  for i = 1, #held, 2 do
    local used = tonumber(held[i + 1])
    if lru == nil or used < lru_used then lru, lru_used = held[i], used end
  end
  redis.call('HSET', draining, lru, now + drain_ms)
  return {0, 'drain:' .. lru}
end
return {0, 'no room'}
"""
)
"""KEYS: leases, loaded, draining. ARGV: model, lease ids (space-separated: as many as
wanted), ttl ms, parallel, max loaded (0: unlimited), keep-warm ms, drain ms, may
drain (1/0), then the models wanted on this host (calls waiting or runs going: never
swapped out for another). Returns {leases granted (the first ids), how}."""

RELEASE_SCRIPT = (
    _NOW
    + """
local removed = redis.call('ZREM', KEYS[1], ARGV[1] .. '\\n' .. ARGV[2])
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then redis.call('HSET', KEYS[2], ARGV[1], now) end
return removed
"""
)
"""KEYS: leases, loaded. ARGV: model, lease id. The model's last use is now."""

RENEW_SCRIPT = (
    _NOW
    + """
local kept = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
    kept[#kept + 1] = 1
  else
    kept[#kept + 1] = 0
  end
end
return kept
"""
)
"""KEYS: leases. ARGV: ttl ms, then members. 0 for a lease that had expired."""


@dataclass(frozen=True)
class HostLimits:
    parallel: int
    """Calls of one model at once (OLLAMA_NUM_PARALLEL)."""
    max_loaded: int
    """Models loaded at once (OLLAMA_MAX_LOADED_MODELS); 0: no limit."""


@dataclass(frozen=True)
class Lease:
    host: str
    model: str
    lease_id: str
    how: str
    """``loaded``, ``load`` or ``swap:MODEL``: whether the call made the host load."""

    @property
    def member(self) -> str:
        return f"{self.model}\n{self.lease_id}"


@dataclass(frozen=True)
class HostView:
    """A host as the workers' leases describe it, at ``now_ms`` (the server's clock)."""

    host: str
    now_ms: int
    inflight: dict[str, int] = field(default_factory=dict)
    loaded: dict[str, int] = field(default_factory=dict)
    """Model -> last use (ms)."""
    draining: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SlotTimes:
    lease_ttl_ms: int = 30_000
    """A lease not renewed for this long is a dead worker's: its slot comes back."""
    keep_warm_ms: int = 0
    """A margin: a model used this recently is not swapped out."""
    drain_ms: int = 60_000
    """How long a drain request stands if the model it makes room for never comes."""


class HostSlots:
    """The Redis side: acquire, renew and release leases; read a host's view."""

    def __init__(self, redis: aioredis.Redis, times: SlotTimes = SlotTimes()) -> None:
        self._redis = redis
        self.times = times
        self._acquire = redis.register_script(ACQUIRE_SCRIPT)
        self._renew = redis.register_script(RENEW_SCRIPT)

    async def acquire(
        self,
        host: str,
        model: str,
        limits: HostLimits,
        *,
        count: int = 1,
        protect: Iterable[str] = (),
        may_drain: bool = False,
    ) -> list[Lease] | str:
        """Up to ``count`` leases for calls of ``model`` on ``host`` (in one script
        call), or why there is none (``full``, ``draining``, ``no room``, ``drain:MODEL``
        when a drain was asked)."""
        ids = [uuid.uuid4().hex for _ in range(max(count, 1))]
        times = self.times
        granted, how = await self._acquire(
            keys=_keys(host),
            args=[
                model,
                " ".join(ids),
                times.lease_ttl_ms,
                limits.parallel,
                limits.max_loaded,
                times.keep_warm_ms,
                times.drain_ms,
                1 if may_drain else 0,
                *sorted(set(protect) - {model}),
            ],
        )
        if not int(granted):
            return text(how)
        return [Lease(host, model, lease_id, text(how)) for lease_id in ids[: int(granted)]]

    def queue_release(self, pipe: Pipeline, lease: Lease) -> None:
        """Add the release to a caller's pipeline (with the result it follows)."""
        keys = [llm_host_leases_key(lease.host), llm_host_loaded_key(lease.host)]
        pipe.eval(RELEASE_SCRIPT, len(keys), *keys, lease.model, lease.lease_id)

    async def release(self, *leases: Lease) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            for lease in leases:
                self.queue_release(pipe, lease)
            await pipe.execute()

    async def renew(self, leases: Sequence[Lease]) -> list[Lease]:
        """Push the expiry of every lease on; return the ones that had expired."""
        by_host: dict[str, list[Lease]] = {}
        for lease in leases:
            by_host.setdefault(lease.host, []).append(lease)
        lost: list[Lease] = []
        for host, held in by_host.items():
            kept = await self._renew(
                keys=[llm_host_leases_key(host)],
                args=[self.times.lease_ttl_ms, *(lease.member for lease in held)],
            )
            lost += [lease for lease, ok in zip(held, kept, strict=True) if not int(ok)]
        return lost

    VIEW_REPLIES = 3

    @staticmethod
    def queue_view(pipe: Pipeline, host: str) -> None:
        """Add the reads of a host's view to a pipeline (``VIEW_REPLIES`` replies)."""
        leases, loaded, draining = _keys(host)
        pipe.zrange(leases, 0, -1, withscores=True)
        pipe.hgetall(loaded)
        pipe.hgetall(draining)

    @staticmethod
    def view(host: str, now_ms: int, replies: Sequence[Any]) -> HostView:
        """The host's view from the replies ``queue_view`` asked for, at ``now_ms``
        (the server's clock, read in the same pipeline)."""
        leases, loaded, draining = replies
        inflight: dict[str, int] = {}
        for member, expiry in leases:
            if expiry > now_ms:
                model = text(member).rsplit("\n", 1)[0]
                inflight[model] = inflight.get(model, 0) + 1
        drains = frozenset(m for m, until in text_map(draining).items() if int(until) > now_ms)
        return HostView(
            host=host,
            now_ms=now_ms,
            inflight=inflight,
            loaded={m: int(used) for m, used in text_map(loaded).items()},
            draining=drains,
        )


class LocalSlots:
    """Slots of a host inside this process (the embedded model): the same interface,
    counted here, since another worker's calls do not use this process's model."""

    def __init__(self) -> None:
        self._inflight: dict[tuple[str, str], int] = {}
        self._lock = asyncio.Lock()

    async def acquire(
        self, host: str, model: str, limits: HostLimits, *, count: int = 1
    ) -> list[Lease] | str:
        async with self._lock:
            held = self._inflight.get((host, model), 0)
            granted = min(max(count, 1), limits.parallel - held)
            if granted <= 0:
                return "full"
            self._inflight[(host, model)] = held + granted
        return [Lease(host, model, uuid.uuid4().hex, "loaded") for _ in range(granted)]

    def release(self, lease: Lease) -> None:
        key = (lease.host, lease.model)
        self._inflight[key] = max(self._inflight.get(key, 0) - 1, 0)

    def view(self, host: str) -> HostView:
        inflight = {m: n for (h, m), n in self._inflight.items() if h == host and n}
        return HostView(host=host, now_ms=0, inflight=inflight, loaded={})


def _keys(host: str) -> list[str]:
    return [llm_host_leases_key(host), llm_host_loaded_key(host), llm_host_draining_key(host)]
