"""Seed 001's paragraph corpora, as an in-memory index per scope rebuilt from the run
logs (the vectors are in the logs; nothing else stores a corpus).

A scope is ``run:{id}`` or ``experiment:{name}`` (every run of the experiment).
Before each check the index reads what the scope's runs appended since the last
read (``contreact_bus.scope_logs``, the reader of ``contreact corpus stats`` too: a
run whose log has left Redis is read from its archive, once). A corpus cleared with
``contreact corpus clear`` ignores chunks accepted up to the moment it was cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.replies import text
from contreact_bus.scope_logs import RunCursor, read_since, scope_run_ids
from contreact_events.diversity.corpus import CorpusProjection
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.names import corpus_cleared_key


@dataclass
class _Run:
    cursor: RunCursor
    projection: CorpusProjection = field(default_factory=CorpusProjection)


@dataclass
class _Scope:
    cleared: str = ""
    runs: dict[str, _Run] = field(default_factory=dict)


class CorpusIndex:
    def __init__(self, redis: aioredis.Redis, archive_dir: Path) -> None:
        self._redis = redis
        self._archive_dir = archive_dir
        self.index = VectorIndex()
        self._scopes: dict[str, _Scope] = {}

    async def refresh(self, scope: str) -> int:
        """Bring ``scope`` up to date with its runs' logs; return its chunk count."""
        raw = await self._redis.get(corpus_cleared_key(scope))
        cleared = text(raw) if raw else ""
        known = self._scopes.get(scope)
        if known is None or known.cleared != cleared:
            self.index.clear(scope)
            known = self._scopes[scope] = _Scope(cleared=cleared)
        cutoff = datetime.fromisoformat(cleared) if cleared else None
        runs = [
            known.runs.setdefault(member, _Run(RunCursor(member)))
            for member in await scope_run_ids(self._redis, scope)
        ]
        news = await read_since(self._redis, self._archive_dir, [run.cursor for run in runs])
        for run, events in zip(runs, news, strict=True):
            for chunk in run.projection.feed(events):
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
