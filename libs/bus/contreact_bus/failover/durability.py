"""How far a write that acknowledges work must have gone before the work goes on.

Redis replicates asynchronously: a primary that dies takes with it what its replicas
had not received yet. The writes that acknowledge work (the run-log append whose
events call for a task, an assessment record) are followed by ``WAIT replicas
timeout``: the work goes on only once ``replicas`` replicas hold everything the
connection wrote, and a ``WAIT`` that times out short raises ``ReplicasBehind``, a
``ConnectionError``, so the caller treats the write as one whose outcome is unknown
(Redis down: refold from the log, try again). ``replicas = 0`` (the default, and a
deployment without replicas): no ``WAIT``, as before. What this promises, and what it
does not, is in ``docs/how-to/redis-sentinel.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from contreact_events.names import REPLICATION_MARK

DEFAULT_WAIT_TIMEOUT_MS = 2000
"""How long a ``WAIT`` may take: a replica that is connected acknowledges in well under a
millisecond on a LAN; past this it is lagging or gone, and the write counts as unsure."""


class ReplicasBehind(RedisConnectionError):
    """Fewer replicas than required acknowledged a write within the timeout."""


@dataclass(frozen=True)
class Durability:
    replicas: int = 0
    """Replicas that must hold an acknowledging write before the work goes on."""
    timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS

    @property
    def waits(self) -> bool:
        return self.replicas > 0

    def queue_wait(self, pipe: Any) -> None:
        """Add the ``WAIT`` to a caller's pipeline, after the writes it covers: ``WAIT``
        counts what its own connection wrote (a pooled client's next command may run on
        another connection, which wrote nothing), so it goes in the writes' pipeline.
        Its reply goes to ``check``."""
        pipe.execute_command("WAIT", self.replicas, self.timeout_ms)

    async def sync(self, redis: Any) -> None:
        """Return once the replicas hold every write made so far, by anyone (before
        work goes out from what was read, not written, here: a log refolded after an
        unsure write, a shard taken over). A write of our own, then ``WAIT`` for it."""
        if not self.waits:
            return
        async with redis.pipeline(transaction=False) as pipe:
            pipe.incr(REPLICATION_MARK)
            self.queue_wait(pipe)
            _, acknowledged = await pipe.execute()
        self.check(acknowledged)

    def check(self, acknowledged: Any) -> None:
        if isinstance(acknowledged, BaseException):
            raise acknowledged
        if int(acknowledged) < self.replicas:
            raise ReplicasBehind(
                f"{acknowledged} of the {self.replicas} replica(s) required acknowledged the "
                f"write within {self.timeout_ms} ms"
            )


NO_WAIT = Durability()
"""No ``WAIT``: a deployment without replicas, or one that accepts losing the last writes."""
