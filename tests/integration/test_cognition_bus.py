"""Operator exchanges analysed on a real Redis, every part in this process
(``tests.support.bus_run``): the LLM worker answers each analysis task with the
script's JSON (validated, or the heuristic with the reason), the orchestrator accepts
the answers beside the cycle, the run completes only after them, and rebuild, replay,
export and memory-rebuild are exact. A lost analysis expires, is sent again, and ends
as a stated failure with the heuristic standing in; the run still ends."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_cli.commands.inspect import export, memory_rebuild, rebuild, replay
from contreact_cli.settings import CLISettings
from contreact_events.core.fold import fold_all
from tests.support.bus_run import BusRun
from tests.support.inbox import use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

GOOD = {
    "intent": "request",
    "context_type": "new",
    "confidence": 0.8,
    "persistence_score": 0.7,
    "summary": "The operator asks the agent to go on.",
    "relevant_memories": [],
    "reasoning": "The reply tells the agent what to do.",
}
REPLIES: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"name": "send_message_to_operator", "arguments": {"message": "cycle {cycle}: go on?"}}
        ]
    },
    {"content": "cycle {cycle}: I asked and went on"},
]


def exchange_config(run_id: str, analysis_replies: list[dict[str, Any]], **overrides: Any) -> Any:
    overrides.setdefault("cycle_count", 3)
    overrides.setdefault("cognition", {"analysis": "model"})
    return make_config(
        run_id=run_id,
        script={"replies": REPLIES, "repeat": True, "analysis_replies": analysis_replies},
        **overrides,
    ).model_dump(mode="json")


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    await use_one_shard(aredis)
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    orchestrator = await owning_orchestrator(aredis, settings.archive_dir, log_retention_s=60)
    return BusRun(aredis, redis_url, tmp_path, orchestrator)


def cli(bus: BusRun) -> CLISettings:
    return CLISettings(redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir)


async def test_every_exchange_is_analysed_and_the_run_ends_after_the_analyses(
    bus: BusRun, tmp_path: Path
) -> None:
    answers: list[dict[str, Any]] = [
        {"content": json.dumps(GOOD)},
        {"content": "{not json"},
        {"error": "the model is gone", "transient": False},
    ]
    await bus.submit(exchange_config("cog", answers))
    await bus.settle()
    events = await RunLog(bus.redis).events("cog")
    state = fold_all(events)
    assert state.status == "completed" and state.open_tasks == ()
    analysed = {e.task_id: e for e in events if e.type == "OperatorMessageAnalyzed"}
    assert sorted(analysed) == [f"cog/c{c}/s1/t0/analysis" for c in (1, 2, 3)]
    first, second, third = (analysed[f"cog/c{c}/s1/t0/analysis"] for c in (1, 2, 3))
    assert first.analysis.analyser == "model" and first.fallback_reason is None
    assert second.analysis.analyser == "heuristic"
    assert second.fallback_reason and "(malformed:" in second.fallback_reason
    assert third.fallback_reason and "no model answered" in third.fallback_reason
    types = [e.type for e in events]
    last_analysis = max(i for i, t in enumerate(types) if t == "OperatorMessageAnalyzed")
    assert types[-1] == "RunCompleted" and last_analysis > types.index("CycleEnded")
    settings = cli(bus)
    report = await rebuild(settings, "cog")
    assert report.equal is True, report.comparison
    replayed, inputs, divergence = await replay(settings, "cog")
    assert (replayed, divergence) == (len(events), None) and inputs >= 3 + 3 + 2

    memory = await memory_rebuild(settings, ["cog"], None)
    assert memory["identical"] is True, memory
    path, counts = await export(settings, "cog", tmp_path / "out")
    assert path.exists() and counts


async def test_a_lost_analysis_is_sent_again_then_stated_failed_and_the_run_ends(
    bus: BusRun,
) -> None:
    # Every send of the analysis is past its deadline when the worker takes it: dropped
    # unanswered, as if the worker had died with it.
    config = exchange_config(
        "lost",
        [{"content": json.dumps(GOOD)}],
        cycle_count=1,
        deadlines={"retries": 1},
        cognition={"analysis": "model", "deadline_s": 0.001},
    )
    await bus.submit(config)
    await bus.settle()
    state = fold_all(await RunLog(bus.redis).events("lost"))
    assert state.phase == "cycle_end" and len(state.open_tasks) == 1 and not state.terminal
    later = datetime.now(UTC) + timedelta(hours=1)
    for _ in range(2):  # its deadline passes, twice
        assert await bus.orchestrator.expire_overdue(later) == 1
        await bus.settle()
        later += timedelta(hours=1)
    events = await RunLog(bus.redis).events("lost")
    assert [e.type for e in events][-5:] == [
        "TaskFailed",
        "TaskRetried",
        "TaskFailed",
        "OperatorMessageAnalyzed",
        "RunCompleted",
    ]
    stated = events[-2]
    assert stated.analysis.analyser == "heuristic"
    assert stated.fallback_reason and "failed 2 time(s)" in stated.fallback_reason
