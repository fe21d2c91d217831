"""`contreact rebuild` compares a folded log with the orchestrator's digest only when
both were made by code whose states have the same shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_cli.commands.inspect import rebuild
from contreact_cli.settings import CLISettings
from contreact_events.fold import fold_all
from contreact_events.names import run_meta_key
from contreact_events.state import AgentState
from tests.support.sim import Sim, make_config, say

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
