"""``RunLog.rebuild`` (each entry decoded as the fold takes it) folds a run's stream to
the state ``fold_all`` of ``RunLog.events`` gives, for every saved log and a scripted
run, onto a given state too; an empty log, and a bad entry, are what they were."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import CorruptEvent, InvalidTransition
from contreact_events.names import run_log_key
from contreact_events.wire.codec import event_from_json
from tests.support.sim import Sim, make_config, say

pytestmark = pytest.mark.redis

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


def load(path: Path) -> list[Event]:
    return [event_from_json(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
async def test_a_saved_log_rebuilds_as_it_folds(aredis: aioredis.Redis, path: Path) -> None:
    events = load(path)
    log = RunLog(aredis)
    run_id = events[0].run_id
    await log.append(run_id, events)
    rebuilt = await log.rebuild(run_id)
    assert rebuilt is not None
    assert rebuilt == fold_all(await log.events(run_id)) == fold_all(events)
    assert rebuilt.digest() == fold_all(events).digest()


async def test_a_long_run_rebuilds_across_pages_and_onto_a_state(aredis: aioredis.Redis) -> None:
    sim = Sim(make_config(run_id="paged", cycle_count=120, operator={"mode": "auto"}))
    final = sim.drive([say("", ("write", {"key": "k", "value": "v"})), say("done")])
    assert len(sim.log) > 1000  # more than one XRANGE page
    log = RunLog(aredis)
    await log.append("paged", sim.log)
    assert (await log.rebuild("paged")) == final
    start = fold_all(sim.log[:500])
    assert (await log.rebuild("nothing-here", start)) is start
    assert await log.rebuild("nothing-here") is None
    with pytest.raises(InvalidTransition, match="does not fit"):
        await log.rebuild("paged", start)  # the whole log again onto a state part-way


async def test_a_bad_entry_is_named_with_where_it_is(aredis: aioredis.Redis) -> None:
    sim = Sim(make_config(run_id="bad", cycle_count=1))
    sim.drive([say("a reflection")])
    log = RunLog(aredis)
    await log.append("bad", sim.log[:3])
    entry = await aredis.xadd(
        run_log_key("bad"), {"type": "CycleStarted", "event": '{"type":"CycleStarted"}'}
    )
    where = re.escape(f"{run_log_key('bad')} entry {entry.decode()}: ")
    with pytest.raises(CorruptEvent, match=f"^{where}"):
        await log.rebuild("bad")
