"""Model checks, bounded per host and in time.

A check is one small request (``GET /api/tags``, ``GET /models``) per host. A host
that accepts the connection and never answers must cost its own runs a short wait
and nobody else anything, so:

* each host answers at most ``parallel`` checks of this worker at once; the others
  of that host queue behind them, never in front of another host's checks;
* a check, queue included, gives up after ``timeout_s`` (the worker's setting, a
  small request's timeout, not a long generation's) or just before its task's
  deadline (the run stops waiting then), whichever comes first, and says which host
  did not answer within how long.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from contreact_llm.exceptions import CheckTimedOut

T = TypeVar("T")

DEADLINE_MARGIN_S = 1.0
"""A check ends this much before its task's deadline (at most a tenth of the time
left), so that its answer, not the deadline's expiry, reaches the run."""

CLIENT_SLACK_S = 1.0
"""A check client's read timeout is this much past the check's own cut (the cut,
which names the seconds the check had, must be what ends it)."""


@dataclass(frozen=True)
class CheckTimes:
    timeout_s: float = 10.0
    """Longest a check waits for its host's answer (its queue included)."""
    connect_timeout_s: float = 5.0
    """Longest a check waits to reach its host (the task's own, if shorter)."""
    parallel: int = 4
    """Checks of one host this worker makes at once."""


@dataclass(frozen=True)
class CheckWindow:
    """The time one check has: ``seconds`` in all, up to ``ends_at`` (``time.monotonic()``)."""

    seconds: float
    ends_at: float


def seconds_left(deadline: datetime | None, *, margin: bool = True) -> float | None:
    """Seconds until ``deadline`` (less the margin), None without one; never negative."""
    if deadline is None:
        return None
    left = deadline.timestamp() - datetime.now(UTC).timestamp()
    if margin:
        left -= min(DEADLINE_MARGIN_S, left / 10)
    return max(left, 0.0)


class CheckSlots:
    """Per-host queues for checks, in this process (a check holds no model: nothing
    to share with other workers)."""

    def __init__(self, times: CheckTimes = CheckTimes()) -> None:
        self.times = times
        self._hosts: dict[str, asyncio.Semaphore] = {}

    def budget_s(self, deadline: datetime | None) -> float:
        """How long a check started now may take: its timeout, or less before a deadline."""
        left = seconds_left(deadline)
        return self.times.timeout_s if left is None else min(self.times.timeout_s, left)

    def client_timeouts(self, task_connect_s: float) -> tuple[float, float]:
        """A check client's own timeouts, (answer, connect): reaching the host within the
        shorter of the worker's and the task's connect timeout; the answer a little after
        the check's own cut (so that the cut, naming the time it had, is what the run reads)."""
        connect = min(self.times.connect_timeout_s, task_connect_s, self.times.timeout_s)
        return self.times.timeout_s + CLIENT_SLACK_S, connect

    async def call(
        self,
        host: str,
        window: CheckWindow,
        request: Callable[[], Awaitable[T]],
        *,
        server: str,
        fix: str,
    ) -> T:
        """``request()`` once ``host`` has a free check slot, given up at the end of
        the check's ``window``: then ``CheckTimedOut`` names the ``server`` at ``host``,
        the seconds the check had and ``fix``."""
        allowed = max(window.ends_at - time.monotonic(), 0.0)
        slots = self._hosts.setdefault(host, asyncio.Semaphore(self.times.parallel))
        timeout = asyncio.timeout(allowed)
        try:
            async with timeout, slots:
                return await request()
        except TimeoutError:
            if not timeout.expired():
                raise
            where = f"{server} at {host}"
            raise CheckTimedOut(did_not_answer(where, window.seconds, fix)) from None

    def window(self, deadline: datetime | None) -> CheckWindow:
        """The time a check started now has."""
        seconds = self.budget_s(deadline)
        return CheckWindow(seconds, time.monotonic() + seconds)


def did_not_answer(where: str, seconds: float, fix: str) -> str:
    """The one-line error of a check that got no answer in time."""
    shown = f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"
    return f"{where} did not answer the model check within {shown} s: {fix}"
