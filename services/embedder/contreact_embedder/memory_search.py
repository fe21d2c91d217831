"""Seed 004's ``search_memory`` tool: the run's memory values and earlier reflections
closest in meaning to the agent's query, exact cosine (an index rebuilt from the
run log; memory values are embedded once and cached).

The search is the asking run's own: its log is in Redis while it runs (retention
starts when it ends). It is read as the paragraph corpora are
(``contreact_bus.scope_logs``), so a run whose log has left Redis is answered from
its archive, as ``contreact search --run`` answers it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.scope_logs import RunCursor, read_since
from contreact_embedder.embedding_service import EmbeddingService
from contreact_events.diversity.memory_projection import MemoryProjection
from contreact_events.diversity.vector_index import VectorIndex

PREVIEW = 300
"""Characters of each result shown to the model."""


@dataclass
class _Run:
    cursor: RunCursor
    projection: MemoryProjection = field(default_factory=MemoryProjection)


class MemorySearch:
    def __init__(self, redis: aioredis.Redis, archive_dir: Path, service: EmbeddingService) -> None:
        self._redis = redis
        self._archive_dir = archive_dir
        self._service = service
        self._runs: dict[str, _Run] = {}
        self._value_vectors: dict[tuple[str, str], list[float]] = {}

    async def search(self, run_id: str, query_vector: list[float], query: str, k: int) -> str:
        """The tool's output: numbered results, most similar first."""
        run = self._runs.setdefault(run_id, _Run(RunCursor(run_id)))
        (events,) = await read_since(self._redis, self._archive_dir, [run.cursor])
        run.projection.feed(events)
        values = run.projection.values
        missing = [
            (key, value) for key, value in values.items() if (key, value) not in self._value_vectors
        ]
        if missing:
            embedded = await self._service.aembed_batch([value for _, value in missing])
            for pair, embedding in zip(missing, embedded, strict=True):
                self._value_vectors[pair] = embedding.as_floats()
        index = VectorIndex()
        for key, value in values.items():
            index.add(
                f"memory:{key}",
                self._value_vectors[(key, value)],
                scope=run_id,
                text=value,
                metadata={"label": f"memory '{key}'"},
            )
        for cycle, (text, vector) in run.projection.reflections.items():
            index.add(
                f"reflection:{cycle}",
                vector,
                scope=run_id,
                text=text,
                metadata={"label": f"reflection of cycle {cycle}"},
            )
        hits = index.search(query_vector, k=k, scope=run_id)
        if not hits:
            return "Nothing to search yet: your memory is empty and no reflection is recorded."
        lines = [f"Closest to {query[:100]!r}, most similar first:"]
        for number, hit in enumerate(hits, start=1):
            preview = hit.text if len(hit.text) <= PREVIEW else hit.text[:PREVIEW] + "..."
            lines.append(
                f"{number}. {hit.metadata['label']} (similarity {hit.score:.2f}): {preview}"
            )
        return "\n".join(lines)
