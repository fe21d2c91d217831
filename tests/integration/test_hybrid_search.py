"""Hybrid retrieval with the real all-MiniLM-L6-v2 (issue 17): "car" and "automobile"
rank together, a rare word is found where the cosine alone misses it, and the
embedder's ``search_memory`` answers with the hybrid ranking and every score, newer
before older among equals, the same for the same log. Real Redis, real model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.streams.inbox import Inbox
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.handler import EmbedHandler
from contreact_events.catalog import Event
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested
from contreact_events.cognition.retrieval import Candidate, Weights, rank
from contreact_events.wire.tasks import EmbedTask

pytestmark = [pytest.mark.slow, pytest.mark.redis]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
COSINE_ONLY = Weights(cosine=1.0, keyword=0.0, recency=0.0)
MEMORIES = {
    "car": "My car needs new tyres before winter.",
    "automobile": "I bought a new automobile last week and drove it to the coast.",
    "bread": "The bread recipe needs four cups of flour and a long rise.",
    "stars": "Orion is easiest to see on winter evenings.",
    "list": "Shopping list for Saturday: eggs, milk, bread, apples and a zk4471 for the garage.",
    "panel": "The electrician said the fuse panel in the basement needs new wiring soon.",
    "fuse": "A blown fuse cut the power to the kitchen; replacing the fuse fixed it.",
}


@pytest.fixture(scope="module")
def service() -> EmbeddingService:
    return EmbeddingService()


@pytest.fixture(scope="module")
def candidates(service: EmbeddingService) -> list[Candidate]:
    vectors = service.embed_batch(list(MEMORIES.values()))
    return [
        Candidate(key, text, T0, vector.as_floats())
        for (key, text), vector in zip(MEMORIES.items(), vectors, strict=True)
    ]


def top(service: EmbeddingService, query: str, candidates: list[Candidate], **kw: Any) -> list[str]:
    ranked = rank(query, service.embed(query).as_floats(), candidates, now=T0, **kw)
    return [r.id for r in ranked]


@pytest.mark.parametrize("query", ["car", "automobile", "cars", "my automobiles"])
def test_car_and_automobile_rank_together(
    service: EmbeddingService, candidates: list[Candidate], query: str
) -> None:
    assert set(top(service, query, candidates)[:2]) == {"car", "automobile"}


def test_a_rare_word_is_found_where_the_cosine_alone_misses_it(
    service: EmbeddingService, candidates: list[Candidate]
) -> None:
    query = "did I note the zk4471 electrical part"
    assert top(service, query, candidates, weights=COSINE_ONLY)[0] != "list"
    assert top(service, query, candidates)[0] == "list"


def envelope(n: int) -> dict[str, Any]:
    return {
        "event_id": f"run-h-e{n}",
        "run_id": "run-h",
        "ts": T0 + timedelta(minutes=n),
        "correlation_id": "run-h",
    }


def write(key: str, value: str, n: int) -> list[Event]:
    task_id = f"run-h/w{n}"
    return [
        ToolCallRequested(
            **envelope(n),
            task_id=task_id,
            cycle=1,
            step=n,
            index=0,
            tool_name="write",
            arguments={"key": key, "value": value},
        ),
        ToolCallCompleted(**envelope(n + 1), task_id=task_id, tool_name="write", output="ok"),
    ]


def search_request(task_id: str, query: str, n: int) -> ToolCallRequested:
    return ToolCallRequested(
        **envelope(n),
        task_id=task_id,
        cycle=1,
        step=n,
        index=0,
        tool_name="search_memory",
        arguments={"query": query, "k": 3},
    )


async def test_search_memory_answers_with_the_hybrid_ranking(
    aredis: aioredis.Redis, service: EmbeddingService, tmp_path: Path
) -> None:
    same = "The harbour lights are green on the left and red on the right."
    events = [
        *write("lights_old", same, 0),
        *write("bread", MEMORIES["bread"], 2),
        *write("lights_new", same, 4),
        search_request("run-h/s1", "harbour lights", 6),
    ]
    await RunLog(aredis).append("run-h", events)
    handler = EmbedHandler(service, aredis, Inbox(aredis, 1), tmp_path)
    task = EmbedTask(
        kind="search",
        task_id="run-h/s1",
        run_id="run-h",
        cycle=1,
        text="harbour lights",
        model="all-MiniLM-L6-v2",
        k=3,
    )
    (answer,) = await handler.answers([task])
    output = answer.to_event(T0).output
    lines = output.splitlines()
    assert "method: hybrid" in lines[0]
    assert lines[1].startswith("1. memory 'lights_new' (score ")
    assert lines[2].startswith("2. memory 'lights_old' (score ")
    assert lines[3].startswith("3. memory 'bread' (score ")
    for line in lines[1:]:
        for part in ("meaning ", "words ", "recency "):
            assert part in line
    assert "words 1.00" in lines[1] and "words 0.00" in lines[3]
    # Recency is taken at the search's request: events logged after it change nothing.
    await RunLog(aredis).append("run-h", [search_request("run-h/s2", "other", 600)])
    (again,) = await handler.answers([task])
    assert again.to_event(T0).output == output
