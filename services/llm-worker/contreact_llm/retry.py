"""Retries with exponential backoff, shared by every backend."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from contreact_llm.exceptions import BackendError, CallFailed, HostUnreachable

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    base_s: float = 0.5
    """Delay before the second attempt; doubled before each further one."""
    max_s: float = 10.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.max_s, self.base_s * 2 ** (attempt - 1)))


async def with_retries(
    policy: RetryPolicy,
    call: Callable[[], Awaitable[T]],
    deadline: datetime | None = None,
    *,
    pool: bool = False,
) -> tuple[T, int]:
    """``call()``'s result and the number of attempts it took.

    Transient ``BackendError``s are retried up to ``policy.max_attempts``, and not past
    the task's ``deadline`` (the run stops waiting then); any other ``BackendError``,
    or the last transient one, is raised as ``CallFailed``. In a ``pool`` of hosts an
    unreachable host is not tried again: the call moves to another (``HostUnreachable``).
    """
    attempt = 1
    while True:
        try:
            return await call(), attempt
        except BackendError as exc:
            delay = policy.delay(attempt)
            past = deadline is not None and datetime.now(UTC).timestamp() + delay > (
                deadline.timestamp()
            )
            moves = pool and isinstance(exc, HostUnreachable)
            if not exc.transient or attempt >= policy.max_attempts or past or moves:
                raise CallFailed(exc, attempt) from exc
            log.warning("attempt %d failed (%s); retrying in %.2fs", attempt, exc, delay)
        await asyncio.sleep(delay)
        attempt += 1
