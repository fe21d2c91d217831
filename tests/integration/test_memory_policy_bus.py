"""The memory policy (seed 002's persistent memory, ``cognition.memory_policy``) on a
real Redis with the real orchestrator, LLM worker (scripted backend) and memory service
(SQLite) in this process (``tests.support.bus_run``): a kept exchange is stored under
the reserved prefix before its reply reaches the model; the agent's write and delete
there are refused by the memory store with the rule, its read, list and pattern_search
see the key; rebuild, replay --check, export and memory-rebuild are exact; a fork after
the store has it in its memory; a store whose answer is lost is sent again at its
deadline and applied once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.replies import entries
from contreact_bus.run_log import RunLog
from contreact_cli.commands.inspect import export, memory_rebuild, rebuild, replay
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.catalog.cognition import PersistentMemoryRequested, PersistentMemoryStored
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.fold import fold_all
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import ForkRequest, InboxMessage, fork_requested
from contreact_llm.main import run as run_llm_worker
from contreact_memory.main import run as run_memory_service
from contreact_memory.store import MemoryStore, ToolOutcome
from tests.support.bus_run import BusRun
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

KEY = "persistent/exchange-c001-s01-t00"
KEEP = "Please remember this from now on: my name is Ada, and the harbour code is 4471."


def call(name: str, **arguments: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


REPLIES: list[dict[str, Any]] = [
    call("send_message_to_operator", message="Shall I keep the tide notes?"),  # c1
    {"content": "cycle {cycle}: I asked the operator"},
    call("write", key=KEY, value="my own words"),  # c2: refused
    call("delete", key=KEY),  # refused
    call("read", key=KEY),
    call("list"),
    call("pattern_search", pattern="persistent/"),
    {"content": "cycle {cycle}: I read what was kept"},
]


def policy_config(run_id: str, cognition: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    overrides.setdefault("cycle_count", 2)
    config = make_config(
        run_id=run_id,
        operator={"mode": "auto", "auto_reply": KEEP},
        script={"replies": REPLIES, "analysis_replies": overrides.pop("analysis_replies", [])},
        cognition={"memory_policy": True, **cognition},
        **overrides,
    )
    return config.model_dump(mode="json")


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    await use_one_shard(aredis)
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    orchestrator = await owning_orchestrator(aredis, settings.archive_dir, log_retention_s=60)
    return BusRun(aredis, redis_url, tmp_path, orchestrator)


def cli(bus: BusRun) -> CLISettings:
    return CLISettings(redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir)


def outputs(events: list[Event]) -> list[tuple[str, str, bool]]:
    return [
        (e.tool_name, e.output, e.ok)
        for e in events
        if isinstance(e, ToolCallCompleted) and e.tool_name != "send_message_to_operator"
    ]


async def exact(bus: BusRun, run_id: str, events: list[Event], tmp_path: Path) -> None:
    settings = cli(bus)
    report = await rebuild(settings, run_id)
    assert report.equal is True, report.comparison
    replayed, _inputs, divergence = await replay(settings, run_id)
    assert (replayed, divergence) == (len(events), None)
    memory = await memory_rebuild(settings, [run_id], None)
    assert memory["identical"] is True, memory
    path, counts = await export(settings, run_id, tmp_path / f"out-{run_id}")
    assert path.exists() and counts["CYCLE_START"] == 2


async def test_a_kept_exchange_is_stored_and_the_agent_can_only_read_it(
    bus: BusRun, tmp_path: Path
) -> None:
    await bus.submit(policy_config("keep", {"analysis": "heuristic"}))
    await bus.settle()
    events = await RunLog(bus.redis).events("keep")
    assert fold_all(events).status == "completed"
    types = [e.type for e in events]
    at = types.index("PersistentMemoryRequested")
    assert types[at + 1 : at + 3] == ["PersistentMemoryStored", "ToolCallCompleted"]
    assert types[at + 3] == "LLMRequested"  # the reply reaches the model after the store
    kept = events[at]
    assert isinstance(kept, PersistentMemoryRequested) and kept.key == KEY
    unit = json.loads(kept.value)
    assert unit["operator_reply"] == KEEP and unit["persistence_score"] > 0.6
    rule = "kept by the platform's memory policy"
    (write, delete, read, listed, found) = outputs(events)
    assert write[0] == "write" and not write[2] and rule in write[1]
    assert delete[0] == "delete" and not delete[2] and rule in delete[1]
    assert read == ("read", kept.value, True)
    assert listed == ("list", KEY, True) and found == ("pattern_search", KEY, True)
    live = MemoryStore.open(cli(bus).memory_db, create=False)
    try:
        assert [row[1:3] for row in live.dump("keep")] == [(KEY, kept.value)]
    finally:
        live.close()
    await exact(bus, "keep", events, tmp_path)

    # A fork after the store: its memory has the kept exchange, its cycle 2 reads it.
    await bus.send(fork_requested("child", ForkRequest(parent_run_id="keep", at_cycle=1)))
    await bus.settle()
    child = await RunLog(bus.redis).events("child")
    assert fold_all(child).status == "completed"
    assert [o for o in outputs(child) if o[0] == "read"] == [("read", kept.value, True)]
    await exact(bus, "child", child, tmp_path)


async def test_a_model_analysis_holds_the_cycle_and_its_score_decides(
    bus: BusRun, tmp_path: Path
) -> None:
    answer = {
        "intent": "statement",
        "context_type": "new",
        "confidence": 0.9,
        "persistence_score": 0.95,
        "summary": "The operator gives a name and a code to keep.",
        "relevant_memories": [],
        "reasoning": "A fact to remember.",
    }
    config = policy_config(
        "model", {"analysis": "model"}, analysis_replies=[{"content": json.dumps(answer)}]
    )
    await bus.submit(config)
    await bus.settle()
    events = await RunLog(bus.redis).events("model")
    assert fold_all(events).status == "completed"
    types = [e.type for e in events]
    at = types.index("OperatorMessageAnalysisRequested")
    assert types[at + 1 : at + 5] == [
        "OperatorMessageAnalyzed",
        "PersistentMemoryRequested",
        "PersistentMemoryStored",
        "ToolCallCompleted",
    ]
    analysed = events[at + 1]
    assert analysed.analysis.analyser == "model"
    assert events[at + 2].persistence_score == 0.95
    await exact(bus, "model", events, tmp_path)


async def test_a_store_whose_answer_is_lost_is_sent_again_and_applied_once(
    bus: BusRun, tmp_path: Path
) -> None:
    config = policy_config("lost", {"analysis": "heuristic"}, cycle_count=1)
    await bus.submit(config)
    for _ in range(50):  # everything but the memory service, until the store is asked for
        await bus.decide_inbox()
        await run_llm_worker(bus.llm, burst=True)
        events = await RunLog(bus.redis).events("lost")
        if events[-1].type == "PersistentMemoryRequested":
            break
    else:
        raise AssertionError("the store was never asked for")
    await run_memory_service(bus.memory, burst=True)  # stored; its answer is then lost
    (lost,) = [
        entry_id
        for entry_id, fields in entries(await bus.redis.xrange(INBOX))
        if message_from_fields(InboxMessage, fields).kind == "PersistentMemoryStored"
    ]
    await bus.redis.xdel(INBOX, lost)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await bus.orchestrator.expire_overdue(later) == 1
    await bus.settle()  # sent again: the memory service answers its recorded result
    events = await RunLog(bus.redis).events("lost")
    assert fold_all(events).status == "completed"
    types = [e.type for e in events]
    at = types.index("PersistentMemoryRequested")
    assert types[at + 1 : at + 5] == [
        "TaskFailed",
        "TaskRetried",
        "PersistentMemoryStored",
        "ToolCallCompleted",
    ]
    stored = events[at + 3]
    assert isinstance(stored, PersistentMemoryStored) and stored.ok
    # the first application's answer: applied again, it would say "replaced"
    assert stored.output == f"Kept under key '{KEY}'."
    live = MemoryStore.open(cli(bus).memory_db, create=False)
    try:
        assert [row[1] for row in live.dump("lost")] == [KEY]
        assert live.recorded(stored.task_id) == ToolOutcome(stored.output, True)
    finally:
        live.close()
    settings = cli(bus)
    memory = await memory_rebuild(settings, ["lost"], None)
    assert memory["identical"] is True, memory
    replayed, _inputs, divergence = await replay(settings, "lost")
    assert (replayed, divergence) == (len(events), None)
