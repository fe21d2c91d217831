"""Seed 004's ``search_memory`` tool: the run's memory values and earlier reflections
that best match the agent's query, by the hybrid ranking of
``contreact_events.cognition.retrieval`` (meaning, shared words, recency; each score is
shown with each result). Memory values are embedded once and cached; reflections'
vectors come from the log.

Before contreact-embedder 0.2.0 the ranking was the cosine alone ("similarity" in
the output). A recorded run is not affected: the tool's output is an input logged in
its ``ToolCallCompleted`` and replayed from there, never searched again; a new run's
results may differ. The output's first line names the method (``method: hybrid``).

Recency is measured at the time the search was requested (its ``ToolCallRequested``;
the newest event read when the log has none for the task), so the same log always
gives the same ranking.

The search is the asking run's own: its log is in Redis while it runs (retention
starts when it ends). It is read as the paragraph corpora are
(``contreact_bus.scope_logs``), so a run whose log has left Redis is answered from
its archive, as ``contreact search --run`` answers it.

What it keeps between searches is bounded, so a long-lived embedder does not grow with
the campaign: the projections of the ``cache_runs`` runs searched last and the vectors of
the ``cache_vectors`` memory values used last (least recently used go first; the
embedder's settings size both). A run or a value evicted is read or embedded again
when next asked for: the answer is the same, only slower.

The same ranking, over memory values only, answers a cycle's memory retrieval for the
"relevant memories" prompt block (``cognition.memory_block``): every key, value and score
goes back in ``MemoriesRetrieved``, so the prompt is built from the log alone."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import redis.asyncio as aioredis

from contreact_bus.scope_logs import RunCursor, read_since
from contreact_embedder.embedding_service import EmbeddingService
from contreact_events.catalog.cognition import MEMORY_BLOCK_PREVIEW, RetrievedMemory
from contreact_events.cognition.retrieval import Candidate, Scored, rank
from contreact_events.diversity.memory_projection import MemoryProjection

PREVIEW = 300
"""Characters of each result shown to the model."""
METHOD = "hybrid"
"""Named in the output's first line (the ranking was the cosine alone before 0.2.0)."""


K = TypeVar("K")
V = TypeVar("V")


class LeastRecentlyUsed(Generic[K, V]):
    """A map that holds at most ``size`` entries, dropping the one used longest ago."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a cache holds at least one entry, not {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class _Run:
    cursor: RunCursor
    projection: MemoryProjection = field(default_factory=MemoryProjection)


class MemorySearch:
    def __init__(
        self,
        redis: aioredis.Redis,
        archive_dir: Path,
        service: EmbeddingService,
        *,
        cache_runs: int = 64,
        cache_vectors: int = 20_000,
    ) -> None:
        self._redis = redis
        self._archive_dir = archive_dir
        self._service = service
        self.runs: LeastRecentlyUsed[str, _Run] = LeastRecentlyUsed(cache_runs)
        self.value_vectors: LeastRecentlyUsed[tuple[str, str], list[float]] = LeastRecentlyUsed(
            cache_vectors
        )

    def _run(self, run_id: str) -> _Run:
        run = self.runs.get(run_id)
        if run is None:
            run = _Run(RunCursor(run_id))
            self.runs.put(run_id, run)
        return run

    async def search(
        self, run_id: str, query_vector: list[float], query: str, k: int, task_id: str = ""
    ) -> str:
        """The tool's output: numbered results, best first, each with its scores."""
        run = self._run(run_id)
        (events,) = await read_since(self._redis, self._archive_dir, [run.cursor])
        projection = run.projection
        projection.feed(events)
        candidates = await self._memory_candidates(projection)
        candidates += [
            Candidate(f"reflection:{cycle}", text, projection.reflected_at[cycle], vector)
            for cycle, (text, vector) in projection.reflections.items()
        ]
        now = projection.searched_at.get(task_id) or projection.last_ts
        if not candidates or now is None:
            return "Nothing to search yet: your memory is empty and no reflection is recorded."
        ranked = rank(query, query_vector, candidates, now=now, k=k)
        return render(query, ranked)

    async def retrieve(
        self, run_id: str, query_vector: list[float], query: str, k: int, task_id: str
    ) -> tuple[RetrievedMemory, ...]:
        """``cognition.memory_block``: the run's memory values (not its reflections)
        ranked by the same hybrid retrieval, recency taken at the retrieval's request."""
        run = self._run(run_id)
        (events,) = await read_since(self._redis, self._archive_dir, [run.cursor])
        projection = run.projection
        projection.feed(events)
        now = projection.searched_at.get(task_id) or projection.last_ts
        candidates = await self._memory_candidates(projection)
        if not candidates or now is None:
            return ()
        ranked = rank(query, query_vector, candidates, now=now, k=k)
        return tuple(
            RetrievedMemory(
                key=hit.id.partition(":")[2],
                value=hit.text[:MEMORY_BLOCK_PREVIEW],
                written_at=projection.written_at[hit.id.partition(":")[2]],
                combined=hit.combined,
                cosine=hit.cosine,
                keyword=hit.keyword,
                recency=hit.recency,
            )
            for hit in ranked
        )

    async def _memory_candidates(self, projection: MemoryProjection) -> list[Candidate]:
        values = projection.values
        vectors: dict[tuple[str, str], list[float]] = {}
        missing = []
        for pair in values.items():
            vector = self.value_vectors.get(pair)
            if vector is None:
                missing.append(pair)
            else:
                vectors[pair] = vector
        if missing:
            embedded = await self._service.aembed_batch([value for _, value in missing])
            for pair, embedding in zip(missing, embedded, strict=True):
                vectors[pair] = embedding.as_floats()
                self.value_vectors.put(pair, vectors[pair])
        return [
            Candidate(f"memory:{key}", value, projection.written_at[key], vectors[(key, value)])
            for key, value in values.items()
        ]


def render(query: str, ranked: list[Scored]) -> str:
    """Numbered results with their combined score and each part of it."""
    lines = [
        f"Best matches for {query[:100]!r}, best first (method: {METHOD}: "
        "meaning, shared words and recency):"
    ]
    for number, hit in enumerate(ranked, start=1):
        kind, _, name = hit.id.partition(":")
        label = f"memory {name!r}" if kind == "memory" else f"reflection of cycle {name}"
        preview = hit.text if len(hit.text) <= PREVIEW else hit.text[:PREVIEW] + "..."
        lines.append(
            f"{number}. {label} (score {hit.combined:.2f}; meaning {hit.cosine or 0.0:.2f}, "
            f"words {hit.keyword:.2f}, recency {hit.recency:.2f}): {preview}"
        )
    return "\n".join(lines)
