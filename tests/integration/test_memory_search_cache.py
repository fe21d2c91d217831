"""Issue 28.7: a long-lived embedder's memory-search caches stay bounded (runs and
value vectors, least recently used go first, sized in its settings), and a search
after eviction answers exactly as before. Real Redis, the real all-MiniLM-L6-v2."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.streams.inbox import Inbox
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.handler import EmbedHandler
from contreact_embedder.memory_search import LeastRecentlyUsed
from contreact_embedder.settings import EmbedderSettings
from contreact_events.catalog import Event
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested
from contreact_events.wire.tasks import EmbedTask

pytestmark = [pytest.mark.slow, pytest.mark.redis]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RUNS = 12
VALUES_PER_RUN = 3


@pytest.fixture(scope="module")
def service() -> EmbeddingService:
    return EmbeddingService()


def _events(run_id: str) -> list[Event]:
    out: list[Event] = []
    for n in range(VALUES_PER_RUN):
        task_id = f"{run_id}/w{n}"
        common = {"run_id": run_id, "correlation_id": run_id}
        out += [
            ToolCallRequested(
                event_id=f"{task_id}-q",
                ts=T0 + timedelta(minutes=2 * n),
                task_id=task_id,
                cycle=1,
                step=n,
                index=0,
                tool_name="write",
                arguments={"key": f"note{n}", "value": f"{run_id} wrote note {n} about tides"},
                **common,
            ),
            ToolCallCompleted(
                event_id=f"{task_id}-c",
                ts=T0 + timedelta(minutes=2 * n + 1),
                task_id=task_id,
                tool_name="write",
                output="ok",
                **common,
            ),
        ]
    out.append(
        ToolCallRequested(
            event_id=f"{run_id}/s-q",
            run_id=run_id,
            correlation_id=run_id,
            ts=T0 + timedelta(minutes=30),
            task_id=f"{run_id}/s",
            cycle=1,
            step=9,
            index=0,
            tool_name="search_memory",
            arguments={"query": "tides", "k": 2},
        )
    )
    return out


def _task(run_id: str) -> EmbedTask:
    return EmbedTask(
        kind="search",
        task_id=f"{run_id}/s",
        run_id=run_id,
        cycle=1,
        text="notes about tides",
        model="all-MiniLM-L6-v2",
        k=2,
    )


async def test_a_long_lived_embedders_search_caches_stay_bounded(
    aredis: aioredis.Redis, service: EmbeddingService, tmp_path: Path
) -> None:
    settings = EmbedderSettings(search_cache_runs=4, search_cache_vectors=5)
    handler = EmbedHandler(
        service,
        aredis,
        Inbox(aredis, 1),
        tmp_path,
        search_cache_runs=settings.search_cache_runs,
        search_cache_vectors=settings.search_cache_vectors,
    )
    run_ids = [f"cache-{n:02d}" for n in range(RUNS)]
    for run_id in run_ids:
        await RunLog(aredis).append(run_id, _events(run_id))
    first: dict[str, str] = {}
    for run_id in run_ids:  # a campaign: each run searched in turn
        (answer,) = await handler.answers([_task(run_id)])
        first[run_id] = answer.to_event(T0).output
        assert len(handler.search.runs) <= 4 and len(handler.search.value_vectors) <= 5
    assert f"{run_ids[0]} wrote note" in first[run_ids[0]]
    # The first runs were evicted long ago: searched again, they answer the same.
    for run_id in run_ids[:3]:
        (again,) = await handler.answers([_task(run_id)])
        assert again.to_event(T0).output == first[run_id]
    assert len(handler.search.runs) == 4 and len(handler.search.value_vectors) == 5


def test_least_recently_used_keeps_the_newest_uses() -> None:
    cache: LeastRecentlyUsed[str, int] = LeastRecentlyUsed(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the newest use
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    with pytest.raises(ValueError, match="at least one"):
        LeastRecentlyUsed(0)


def test_the_embedders_settings_size_the_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTREACT_EMBED_SEARCH_CACHE_RUNS", "7")
    monkeypatch.setenv("CONTREACT_EMBED_SEARCH_CACHE_VECTORS", "9")
    settings = EmbedderSettings()
    assert (settings.search_cache_runs, settings.search_cache_vectors) == (7, 9)
