"""The Redis side of a pool (``pool``): each run's pin, and the hosts held down.

A route's pins are a hash ``run id -> "HOST\\nLAST_USE_MS"`` (``llm_route_pins_key``); a
host held down is a string with its last error that expires after ``host_down_s``
(``llm_host_down_key``), so a host comes back by itself. Every worker reads and writes
the same keys: a run keeps its host whichever worker takes its call.

A placement is one Lua script on the route's pins (one key: valid on Redis Cluster),
with the server's clock: the run's pin while it is up, else the policy of
``pool.choose_host`` (the up host with the fewest live pins, then the run's hash order,
given by the caller). Atomic, so runs placed at once by several workers see each
other's pins and spread evenly, and no transaction is retried. A pin not used for
``PIN_IDLE_MS`` is a run that ended (or has rested that long): it no longer counts
against its host, and is dropped when a run is placed."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis.asyncio as aioredis

from contreact_bus.replies import text, text_map
from contreact_events.names import llm_host_down_key, llm_route_pins_key
from contreact_llm.scheduling.pool import tie_break

PIN_IDLE_MS = 3_600_000
"""A pin unused this long no longer counts (its run ended, or rests: it is placed anew)."""

PLACE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pins, run, idle = KEYS[1], ARGV[1], tonumber(ARGV[2])
local ndown = tonumber(ARGV[3])
local down, hosts, inpool = {}, {}, {}
for i = 4, 3 + ndown do down[ARGV[i]] = true end
for i = 4 + ndown, #ARGV do
  hosts[#hosts + 1] = ARGV[i]
  inpool[ARGV[i]] = true
end
local held = redis.call('HGET', pins, run)
if held then
  local host = string.match(held, '^(.*)\\n')
  if host and inpool[host] and not down[host] then
    redis.call('HSET', pins, run, host .. '\\n' .. now)
    return host
  end
end
local counts = {}
local flat = redis.call('HGETALL', pins)
for i = 1, #flat, 2 do
  if flat[i] ~= run then
    local host, used = string.match(flat[i + 1], '^(.*)\\n(%d+)$')
    if host == nil or tonumber(used) + idle < now then
      redis.call('HDEL', pins, flat[i])
    else
      counts[host] = (counts[host] or 0) + 1
    end
  end
end
local best, fewest = false, nil
for _, host in ipairs(hosts) do
  if not down[host] and (fewest == nil or (counts[host] or 0) < fewest) then
    best, fewest = host, counts[host] or 0
  end
end
if best then redis.call('HSET', pins, run, best .. '\\n' .. now) end
return best
"""
"""KEYS: pins. ARGV: run id, idle ms, number of hosts down, the hosts down, the pool's
hosts in the run's tie-break order. Returns the run's host (nil: every host is down)."""


def pin_value(host: str, used_ms: int) -> str:
    """A pin as the hash holds it."""
    return f"{host}\n{used_ms}"


def pinned_hosts(raw: object) -> dict[str, str]:
    """run id -> host, from the pins hash as HGETALL returns it."""
    return {run: value.rsplit("\n", 1)[0] for run, value in text_map(raw).items()}


@dataclass(frozen=True)
class Placed:
    """Where a run's call goes, and why no host could take it when none."""

    host: str | None
    down: dict[str, str] = field(default_factory=dict)
    """The hosts held down (or that failed this call), with their last error."""


class PoolState:
    def __init__(self, redis: aioredis.Redis, down_ms: int = 30_000) -> None:
        self._redis = redis
        self.down_ms = down_ms
        self._place = redis.register_script(PLACE_SCRIPT)

    async def place(
        self, route_id: str, hosts: tuple[str, ...], run_id: str, failed: dict[str, str]
    ) -> Placed:
        """The host of ``run_id``'s next call on the route (``failed``: hosts this call
        could not reach, with why): its pin while it is up, else a new pin."""
        down = await self.down_hosts(hosts) | failed
        order = sorted(hosts, key=lambda host: tie_break(run_id, host))
        host = await self._place(
            keys=[llm_route_pins_key(route_id)],
            args=[run_id, PIN_IDLE_MS, len(down), *down, *order],
        )
        return Placed(text(host) if host else None, down)

    async def mark_down(self, host: str, why: str) -> None:
        await self._redis.set(llm_host_down_key(host), why, px=self.down_ms)

    async def down_hosts(self, hosts: tuple[str, ...]) -> dict[str, str]:
        """The hosts of ``hosts`` held down now, with their last error."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.get(llm_host_down_key(host))
            downs = await pipe.execute()
        return {host: text(why) for host, why in zip(hosts, downs, strict=True) if why}
