"""The "relevant memories" prompt block (``cognition.memory_block``) on a real Redis with
the real orchestrator, LLM worker (scripted), memory service and embedder (the real
all-MiniLM-L6-v2), in this process: each cycle's retrieval is logged with every score;
"car" and "automobile" come back together for a reflection about an automobile, a rare
code is found for a reflection naming it; the prompt that was sent shows them and is
rebuilt from the log alone (replay --check, rebuild, export, memory-rebuild exact)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_cli.commands.inspect import export, memory_rebuild, rebuild, replay
from contreact_cli.settings import CLISettings
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.main import run as run_embedder
from contreact_embedder.settings import EmbedderSettings
from contreact_events.catalog.cognition import MemoriesRetrieved
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import MEMORY_BLOCK_HEADING
from tests.support.bus_run import BusRun
from tests.support.inbox import use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import make_config

pytestmark = [pytest.mark.slow, pytest.mark.redis]

MEMORIES = {
    "car": "My car needs new tyres before winter.",
    "automobile": "I bought a new automobile last week and drove it to the coast.",
    "bread": "The bread recipe needs four cups of flour and a long rise.",
    "list": "Shopping list for Saturday: eggs, milk, bread, apples and a zk4471 for the garage.",
    "panel": "The electrician said the fuse panel in the basement needs new wiring soon.",
    "fuse": "A blown fuse cut the power to the kitchen; replacing the fuse fixed it.",
}
REPLIES: list[dict[str, Any]] = [
    *(
        {"tool_calls": [{"name": "write", "arguments": {"key": key, "value": value}}]}
        for key, value in MEMORIES.items()
    ),
    {"content": "I keep thinking about my vehicle and the drive to the coast."},  # cycle 1
    {"content": "Did I note the zk4471 electrical part?"},  # cycle 2
    {"content": "Done for now."},  # cycle 3
]


@pytest.fixture(scope="module")
def service() -> EmbeddingService:
    return EmbeddingService()


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    await use_one_shard(aredis)
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    orchestrator = await owning_orchestrator(aredis, settings.archive_dir, log_retention_s=60)
    return BusRun(aredis, redis_url, tmp_path, orchestrator)


async def settle(bus: BusRun, service: EmbeddingService, rounds: int = 500) -> None:
    """``BusRun.settle`` with the embedder taking its turn too."""
    embedder = EmbedderSettings(
        redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir, consumer_name="embedder"
    )
    for _ in range(rounds):
        await bus.settle()
        if not await run_embedder(embedder, service, burst=True):
            await bus.settle()
            return
    raise AssertionError("the run did not settle")


async def test_each_cycle_shows_the_memories_its_last_reflection_needs(
    bus: BusRun, service: EmbeddingService, tmp_path: Path
) -> None:
    config = make_config(
        run_id="block",
        cycle_count=3,
        script={"replies": REPLIES},
        cognition={"memory_block": True, "memory_block_k": 2},
    )
    await bus.submit(config.model_dump(mode="json"))
    await settle(bus, service)
    events = await RunLog(bus.redis).events("block")
    state = fold_all(events)
    assert state.status == "completed", state.failure_reason
    first, second, third = (e for e in events if isinstance(e, MemoriesRetrieved))
    assert first.memories == () and first.error is None  # nothing written before cycle 1
    # "vehicle ... drive" shares no word with either: the meaning finds both.
    assert {m.key for m in second.memories} == {"car", "automobile"}
    assert third.memories[0].key == "list"  # the rare code, among the fuse memories
    for hit in (*second.memories, *third.memories):
        assert hit.cosine is not None and 0 < hit.recency <= 1
        assert hit.value == MEMORIES[hit.key]
    settings = CLISettings(redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir)
    report = await rebuild(settings, "block")
    assert report.equal is True, report.comparison
    replayed, _inputs, divergence = await replay(settings, "block")
    assert (replayed, divergence) == (len(events), None)
    memory = await memory_rebuild(settings, ["block"], None)
    assert memory["identical"] is True, memory
    path, _counts = await export(settings, "block", tmp_path / "out")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    calls = [r for r in records if r["event_type"] == "LLM_INVOCATION"]
    last = calls[-1]["payload"]["prompt_messages"][0]["content"]
    assert last.endswith(
        "\n".join([MEMORY_BLOCK_HEADING, *(f"- {m.key!r}: {m.value}" for m in third.memories)])
    )
    assert MEMORY_BLOCK_HEADING not in calls[0]["payload"]["prompt_messages"][0]["content"]
