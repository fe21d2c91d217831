"""Waiting out a Redis that went away: every service loop carries on once it is back.

``REDIS_DOWN`` are the errors that mean "Redis is not reachable right now" (a restart,
a network cut, an append-only file still loading, a failover: no sentinel names a
primary yet (``MasterNotFoundError``, a ``ConnectionError``), a connection still on the
demoted primary (``READONLY``: redis-py's sentinel connection turns it into a
``ConnectionError``; a client by URL gets ``ReadOnlyError``), a ``WAIT`` short of its
replicas (``ReplicasBehind``, a ``ConnectionError``)); anything else is a real error.
"""

from __future__ import annotations

import asyncio
import logging
import time

from redis.exceptions import BusyLoadingError, ReadOnlyError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

REDIS_DOWN: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    BusyLoadingError,
    ReadOnlyError,
    OSError,
)


class Backoff:
    """Exponential waits (``first`` doubling up to ``cap`` seconds) for one loop; one log
    line when the trouble starts, then one every ``log_every_s``, and one when it ends."""

    def __init__(
        self, what: str, *, first: float = 0.1, cap: float = 5.0, log_every_s: float = 30.0
    ) -> None:
        self.what = what
        self._first = first
        self._cap = cap
        self._log_every_s = log_every_s
        self._delay = first
        self._since: float | None = None
        self._logged = 0.0
        self.failures = 0

    async def wait(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if now - self._logged >= self._log_every_s:
            self._logged = now
            log.warning(
                "%s: Redis is unreachable (%s: %s); retrying for %.0f s so far",
                self.what,
                type(exc).__name__,
                exc,
                now - self._since,
            )
        self.failures += 1
        await asyncio.sleep(self._delay)
        self._delay = min(self._delay * 2, self._cap)

    def reset(self) -> None:
        if self._since is not None:
            log.warning(
                "%s: Redis answers again after %.1f s", self.what, time.monotonic() - self._since
            )
        self._since = None
        self._logged = 0.0
        self._delay = self._first
