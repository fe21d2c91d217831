"""The answer to a digest request: the held state's digest, for ``contreact rebuild``
to compare with the digest of the log folded afresh."""

from __future__ import annotations

import redis.asyncio as aioredis

from contreact_events.core.state import AgentState
from contreact_events.names import run_digest_key

DIGEST_TTL_S = 300


async def write_digest(redis: aioredis.Redis, state: AgentState, source: str) -> None:
    """Write ``state``'s digest where the CLI waits for it (``source``: ``memory`` for a
    held state, ``log`` for one folded to answer)."""
    key = run_digest_key(state.run_id)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.hset(
            key,
            mapping={
                "digest": state.digest(),
                "digest_shape": AgentState.shape(),
                "seq": str(state.seq),
                "held": source,
            },
        )
        pipe.expire(key, DIGEST_TTL_S)
        await pipe.execute()
