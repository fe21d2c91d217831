"""A route's set of runs (``llm:route:ID:runs``: which runs will call its model again)
keeps only the runs still going, whatever the host: the worker's housekeeping drops the
ended ones. Before, only a host with a model limit had its routes' sets pruned, so on a
hosted API or a scripted model the sets kept every run that ever called, for ever
(issue 32: 32 bytes a finished run of bench.services.scale)."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from contreact_bus.llm_routes import llm_task_stream, route_of
from contreact_events.catalog.chat import ChatMessage
from contreact_events.names import ACTIVE_RUNS, llm_route_runs_key
from contreact_events.wire.tasks import LLMTask
from contreact_llm.handler import build_handler
from contreact_llm.main import build_scheduler, run
from contreact_llm.settings import LLMWorkerSettings
from tests.support.inbox import use_one_shard
from tests.support.orchestration import ask_for

pytestmark = pytest.mark.redis

HOST = "http://hosted.example:11434"


def chat(run_id: str) -> LLMTask:
    return LLMTask(
        kind="chat",
        task_id=f"{run_id}/c1/s1",
        run_id=run_id,
        backend="scripted",
        model="m",
        host=HOST,
        hosts=(HOST,),
        messages=(ChatMessage(role="user", content="Cycle 1 begins."),),
        script={"replies": [{"content": "Done."}]},
    )


@pytest.mark.parametrize("max_loaded", [0, 2], ids=["no model limit", "a model limit"])
async def test_the_housekeeping_drops_ended_runs_from_every_routes_set(
    aredis: aioredis.Redis, redis_url: str, max_loaded: int
) -> None:
    await use_one_shard(aredis)
    tasks = [chat(f"run-{n}") for n in range(6)]
    going = {"run-1", "run-4"}
    await aredis.sadd(ACTIVE_RUNS, *going)  # the others have ended
    for task in tasks:
        await ask_for(aredis, task.run_id, task)
        await llm_task_stream(aredis, task).send(task)
    key = llm_route_runs_key(route_of(tasks[0]).id)
    assert len(await aredis.smembers(key)) == 6
    settings = LLMWorkerSettings(
        redis_url=redis_url,
        consumer_name="w1",
        hosts={HOST: {"parallel": 8, "max_loaded_models": max_loaded}},
        poll_s=0.1,
    )
    assert await run(settings, burst=True) == 6
    handler = await build_handler(aredis, settings)
    try:
        await build_scheduler(aredis, handler, settings).housekeep()
    finally:
        await handler.aclose()
    assert {m.decode() for m in await aredis.smembers(key)} == going
