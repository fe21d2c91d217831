"""`contreact rebuild` compares a folded log with the orchestrator's digest only when
both were made by code whose states have the same shape; `contreact memory-rebuild`
replays exactly the memory calls the memory service executed."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_cli.commands.inspect import memory_rebuild, rebuild
from contreact_cli.settings import CLISettings
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.names import run_meta_key
from contreact_memory.store import MemoryStore
from tests.support.sim import Sim, make_config, say
from tests.support.store_sim import StoreSim

pytestmark = pytest.mark.redis


async def test_a_digest_of_another_state_shape_is_not_compared(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.drive([say("a reflection")])
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    write_archive(settings.archive_dir, "run-1", sim.log)
    digest = fold_all(sim.log).digest()

    await aredis.hset(
        run_meta_key("run-1"), mapping={"digest": digest, "digest_shape": AgentState.shape()}
    )
    same = await rebuild(settings, "run-1")
    assert same.equal is True

    await aredis.hset(run_meta_key("run-1"), mapping={"digest": "0" * 64, "digest_shape": "old"})
    older = await rebuild(settings, "run-1")
    assert older.equal is None and "another shape" in older.comparison

    await aredis.hset(run_meta_key("run-1"), mapping={"digest": "0" * 64})
    await aredis.hset(run_meta_key("run-1"), mapping={"digest_shape": AgentState.shape()})
    wrong = await rebuild(settings, "run-1")
    assert wrong.equal is False  # same shape, other state: a real difference


def test_the_shape_changes_when_the_state_does() -> None:
    assert AgentState.shape() == AgentState.shape()
    assert len(AgentState.shape()) == 16

    class Wider(AgentState):
        extra: int = 0

    assert Wider.shape() != AgentState.shape()


async def test_memory_rebuild_of_a_run_with_a_capped_write_finds_no_difference(
    redis_url: str, tmp_path: Path
) -> None:
    """A ``write`` over ``memory_value_chars`` is answered by the orchestrator, never
    by the memory service: the rebuild must not replay it (it did, and reported a key
    only in the rebuilt store)."""
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    live = MemoryStore.open(settings.memory_db)
    config = make_config(cycle_count=2, limits={"memory_value_chars": 30})
    sim = StoreSim(config, live)
    state = sim.drive(
        [
            say(
                "",
                ("write", {"key": "big", "value": "x" * 31}),
                ("write", {"key": "k", "value": "v"}),
            ),
            say("", ("read", {"key": "big"})),
            say("done"),
        ]
    )
    live.close()
    assert state.status == "completed"
    write_archive(settings.archive_dir, "run-1", sim.log)

    report = await memory_rebuild(settings, ["run-1"], tmp_path / "rebuilt.db")
    assert report["differences"] == []
    assert report["output_mismatches"] == []
    assert report["identical"] is True and report["entries"] == 1
