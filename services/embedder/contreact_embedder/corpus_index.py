"""Seed 001's paragraph corpora, as an in-memory index per scope rebuilt from the run
logs (the vectors are in the logs; nothing else stores a corpus).

A scope is ``run:{id}`` or ``experiment:{name}`` (every run of the experiment).
Before each check the index reads what the scope's runs appended since the last
read. A corpus cleared with ``contreact corpus clear`` ignores chunks accepted up
to the moment it was cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import redis.asyncio as aioredis

from contreact_bus.replies import text
from contreact_bus.run_log import RunLog
from contreact_bus.runs import experiment_run_ids
from contreact_events.diversity.corpus import CorpusProjection, run_scope
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.names import corpus_cleared_key


@dataclass
class _RunCursor:
    last_id: bytes = b"-"
    projection: CorpusProjection = field(default_factory=CorpusProjection)


@dataclass
class _Scope:
    cleared: str = ""
    runs: dict[str, _RunCursor] = field(default_factory=dict)


class CorpusIndex:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis
        self._log = RunLog(redis)
        self.index = VectorIndex()
        self._scopes: dict[str, _Scope] = {}

    async def refresh(self, scope: str, run_id: str, experiment: str | None) -> int:
        """Bring ``scope`` up to date with its runs' logs; return its chunk count."""
        raw = await self._redis.get(corpus_cleared_key(scope))
        cleared = text(raw) if raw else ""
        known = self._scopes.get(scope)
        if known is None or known.cleared != cleared:
            self.index.clear(scope)
            known = self._scopes[scope] = _Scope(cleared=cleared)
        cutoff = datetime.fromisoformat(cleared) if cleared else None
        run_ids = (
            [run_id]
            if scope == run_scope(run_id) or not experiment
            else (await experiment_run_ids(self._redis, experiment))
        )
        for member in run_ids:
            cursor = known.runs.setdefault(member, _RunCursor())
            entries = await self._log.read(member, after=cursor.last_id)
            if not entries:
                continue
            cursor.last_id = entries[-1][0]
            for chunk in cursor.projection.feed(event for _, event in entries):
                if chunk.scope != scope or (cutoff is not None and chunk.accepted_at <= cutoff):
                    continue
                self.index.add(
                    chunk.chunk_id,
                    chunk.vector,
                    scope=scope,
                    text=chunk.text,
                    metadata={
                        "run_id": chunk.run_id,
                        "cycle": str(chunk.cycle),
                        "chunk_index": str(chunk.index),
                        "parent_id": f"{chunk.run_id}/c{chunk.cycle}",
                    },
                )
        return self.index.count(scope)
