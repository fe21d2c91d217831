"""A pool of OpenAI-compatible servers (``openai_client_config.base_urls``: vLLM or
llama.cpp's server on several GPU hosts), served by the same pool as Ollama's hosts:
real LLM workers on a real Redis, OpenAI-compatible stand-ins on real sockets
(``tests/support/fake_openai.py``). A run's calls stick to one server; when that server
is killed mid-run the run's next call moves to the other, which keeps it; a server that
hangs up in the middle of an answer is passed over at once; every server down is one
line; the model check passes over a server that does not answer."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.llm_routes import route_of
from contreact_bus.local_redis import free_port
from contreact_events.names import llm_host_down_key, llm_route_pins_key
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends.openai import OpenAIBackend
from contreact_llm.main import run
from contreact_llm.retry import RetryPolicy
from contreact_llm.scheduling.pool_state import pinned_hosts
from contreact_llm.settings import LLMWorkerSettings
from tests.integration.test_gpu_pool import answers, host_of, pin, send
from tests.support.fake_openai import running_fake_openai
from tests.support.inbox import use_one_shard
from tests.support.pool_tasks import pool_chat, pool_worker
from tests.support.silent_host import silent_host

pytestmark = pytest.mark.redis


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


def chat(run_id: str, pool: tuple[str, ...], step: int = 1) -> LLMTask:
    return pool_chat(run_id, pool, "openai", f"Step {step} begins.", step, api_key_env=None)


def worker(redis_url: str, pool: tuple[str, ...], **changes: Any) -> LLMWorkerSettings:
    return pool_worker(redis_url, "w1", pool, 2, 0, **changes)


async def test_a_run_sticks_to_its_server_and_moves_when_that_server_is_killed(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """Two calls on the run's server; that server is killed (its port then refuses
    connections); the third call moves to the other server, which is recorded as its
    host, and the fourth stays there: the run goes on to its end."""
    with contextlib.ExitStack() as both:
        stacks = [both.enter_context(contextlib.ExitStack()) for _ in range(2)]
        servers = [stack.enter_context(running_fake_openai(["m"])) for stack in stacks]
        for server in servers:
            for n in range(4):
                server.reply(f"answer {n} from {server.base_url}")
        pool = tuple(server.base_url for server in servers)
        served: list[str] = []
        for step in (1, 2, 3, 4):
            if step == 3:
                stacks[pool.index(served[0])].close()  # killed mid-run, between its calls
            await send(aredis, chat("run-a", pool, step))
            await run(worker(redis_url, pool), burst=True)
            served.append(host_of((await answers(aredis))[f"run-a/c1/s{step}"]))
        killed = served[0]
        other = next(url for url in pool if url != killed)
        assert served == [killed, killed, other, other]
        assert {s.base_url: len(s.chat_requests()) for s in servers} == {killed: 2, other: 2}
    why = await aredis.get(llm_host_down_key(killed))
    assert why is not None and b"no OpenAI-compatible server answers at" in why
    pins = pinned_hosts(await aredis.hgetall(llm_route_pins_key(route_of(chat("x", pool)).id)))
    assert pins == {"run-a": other}


async def test_a_server_that_hangs_up_mid_answer_is_passed_over_at_once(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """The run's server drops the connection in the middle of the call: the call is not
    tried there again, the other server answers it, and the run's pin moves."""
    with running_fake_openai(["m"]) as one, running_fake_openai(["m"]) as two:
        pool = (one.base_url, two.base_url)
        pins = llm_route_pins_key(route_of(chat("x", pool)).id)
        await pin(aredis, pins, {"run-b": one.base_url})
        one.drop_connection()
        one.reply("never sent")
        two.reply("from two")
        await send(aredis, chat("run-b", pool))
        await run(worker(redis_url, pool), burst=True)
        answer = (await answers(aredis))["run-b/c1/s1"]
        assert host_of(answer) == two.base_url
        assert answer.data["message"]["content"] == "from two"
        assert len(one.chat_requests()) == 1  # not retried on the server that hung up
    assert pinned_hosts(await aredis.hgetall(pins)) == {"run-b": two.base_url}


async def test_a_server_that_stops_answering_is_passed_over_after_the_calls_timeout(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    """A server that accepts connections and never answers (a wedged vLLM): the run
    pinned to it waits ``timeout_s``, then moves; the server is held down."""
    with silent_host() as wedged, running_fake_openai(["m"]) as alive:
        pool = (f"{wedged.url}/v1", alive.base_url)
        pins = llm_route_pins_key(route_of(chat("x", pool)).id)
        await pin(aredis, pins, {"run-c": pool[0]})
        alive.reply("from the live one")
        task = chat("run-c", pool).model_copy(update={"timeout_s": 1.0})
        await send(aredis, task)
        await run(worker(redis_url, pool), burst=True)
        assert host_of((await answers(aredis))[task.task_id]) == alive.base_url
        assert wedged.accepted >= 1
    why = await aredis.get(llm_host_down_key(pool[0]))
    assert why is not None and b"did not answer within the call's timeout" in why
    assert pinned_hosts(await aredis.hgetall(pins)) == {"run-c": alive.base_url}


async def test_a_pool_of_servers_all_down_fails_the_call_with_one_line(
    aredis: aioredis.Redis, redis_url: str
) -> None:
    pool = (f"http://127.0.0.1:{free_port()}/v1", f"http://127.0.0.1:{free_port()}/v1")
    await send(aredis, chat("lonely", pool))
    await run(worker(redis_url, pool), burst=True)
    failed = (await answers(aredis))["lonely/c1/s1"]
    assert failed.kind == "LLMFailed"
    error = str(failed.data["error"])
    assert "\n" not in error
    assert error.startswith("every host of the pool for model 'm' is down")
    assert all(host in error for host in pool) and "openai_client_config.base_urls" in error


async def test_the_check_passes_over_a_server_that_does_not_answer() -> None:
    """The model must be served wherever a server of the pool answers; a server that
    cannot be reached is named, not fatal; none reachable, or one without the model,
    fails the check."""
    dead = f"http://127.0.0.1:{free_port()}/v1"
    backend = OpenAIBackend(RetryPolicy(max_attempts=2, base_s=0.001, max_s=0.01), environ={})
    try:
        with running_fake_openai(["m"]) as alive, running_fake_openai(["other"]) as wrong:
            check = chat("c", (dead, alive.base_url)).model_copy(update={"kind": "check"})
            outcome = await backend.check(check)
            assert outcome.ok, outcome.detail
            assert f"served by {alive.base_url}" in outcome.detail
            assert f"passed over, not answering: {dead}" in outcome.detail
            mixed = check.model_copy(update={"hosts": (alive.base_url, wrong.base_url)})
            refused = await backend.check(mixed)
            assert not refused.ok and f"not served by {wrong.base_url}" in refused.detail
        nobody = check.model_copy(update={"hosts": (dead, alive.base_url)})
        none = await backend.check(nobody)
        assert not none.ok
        assert none.detail.startswith("no host of the pool for model 'm' answers")
    finally:
        await backend.aclose()
