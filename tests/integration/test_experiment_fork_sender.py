"""An experiment file's forks sent as ``experiment run`` sends them (``ForkSender``), on a
real Redis with the orchestrator, the LLM worker and the memory service in this process:
a fork the orchestrator refuses (its id is taken) is not asked for again by the same
process. It was, twice a second, for ever: ``experiment run`` never exited."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.experiments import ReplicaEntry, queue_entry
from contreact_cli.runs.experiment_forks import ForkSender
from contreact_events.config.experiment import expand, parse_experiment
from contreact_events.config.experiment_resume import Submission
from contreact_events.history.experiment_forks import planned_forks
from contreact_events.wire.tasks import ForkRequest, fork_requested
from tests.support.bus_run import BusRun, bus_run

pytestmark = pytest.mark.redis

SWAP = {
    "experiment": "sent",
    "replicas": 1,
    "cycle_count": 2,
    "backend": "scripted",
    "script": {"replies": [{"content": "cycle {cycle}"}], "repeat": True},
    "diversity": {"enabled": False},  # no embedder here
    "models": [{"label": "A", "model_name": "model-a"}, {"label": "B", "model_name": "model-b"}],
    "fork": {"at_cycle": 1, "cycle_count": 3},
}


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    return await bus_run(aredis, redis_url, tmp_path)


async def test_a_refused_fork_is_not_asked_for_again(bus: BusRun) -> None:
    experiment = parse_experiment(SWAP)
    planned = expand(experiment)
    async with bus.redis.pipeline(transaction=False) as pipe:
        for run in planned:
            queue_entry(pipe, "sent", ReplicaEntry.of(Submission(run, "submit", 1, run.config)))
        await pipe.execute()
    for run in planned:
        await bus.submit(run.config.model_dump(mode="json"))
    await bus.settle()
    # `contreact fork sent-A-A --at-cycle 1 --run-id sent-A-A-to-B`: the fork's id, taken
    await bus.send(
        fork_requested("sent-A-A-to-B", ForkRequest(parent_run_id="sent-A-A", at_cycle=1))
    )
    await bus.settle()

    sender = ForkSender("sent", planned_forks(experiment, planned))
    assert sorted(await sender.send_ready(bus.redis)) == ["sent-A-A-to-B", "sent-B-A-to-A"]
    await bus.settle()
    refused = await sender.refused(bus.redis)
    assert list(refused) == ["sent-A-A-to-B"] and "exists" in refused["sent-A-A-to-B"]
    assert await sender.send_ready(bus.redis) == []  # not again
    assert await sender.refused(bus.redis) == {}
