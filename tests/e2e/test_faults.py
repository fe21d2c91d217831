"""The fault suite: every service a real process under `contreact up`'s supervisor, on a
real Redis, broken on purpose while runs go on. Afterwards every run has exactly its
cycle count or a failure with a stated reason, every log folds and replays, the
orchestrator's final state equals the rebuilt one, and no memory effect was applied
twice. Nobody runs `contreact up` again after a fault: the platform recovers alone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from contreact_bus.inbox import Inbox
from contreact_bus.run_log import RunLog
from contreact_bus.runs import list_runs, load_events
from contreact_events.config import parse_run_config
from contreact_events.core.fold import fold_all
from contreact_events.core.replay import replay_check
from contreact_events.names import ORCHESTRATOR_REPLICAS, run_meta_key
from contreact_events.wire.tasks import InboxMessage
from tests.support.fake_ollama import running_fake_ollama
from tests.support.stack import Stack, running_stack
from tests.support.stack_env import stack_environment

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

QUICK_RECLAIM = {
    "CONTREACT_LLM_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_MEMORY_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_EMBED_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_ORCH_LEASE_TTL_S": "4",
    "CONTREACT_ORCH_RENEW_EVERY_S": "1",
}
DEADLINES = {"check_s": 40, "llm_s": 40, "memory_s": 30, "embed_s": 60, "retries": 6}


def chaos_config(run_id: str, *, cycles: int = 4, diversity: bool = False) -> dict[str, Any]:
    """A scripted run that writes, reads and reflects each cycle, with some latency."""
    return {
        "run_id": run_id,
        "model_name": "chaos-model",
        "cycle_count": cycles,
        "backend": "scripted",
        "diversity": {"enabled": diversity},
        "deadlines": DEADLINES,
        "script": {
            "repeat": True,
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write", "arguments": {"key": "note", "value": "cycle {cycle}"}}
                    ],
                    "latency_ms": 150,
                },
                {"tool_calls": [{"name": "read", "arguments": {"key": "note"}}], "latency_ms": 150},
                {"content": "In cycle {cycle} I kept a note and read it back.", "latency_ms": 150},
            ],
        },
    }


async def submit_all(url: str, configs: list[dict[str, Any]]) -> None:
    """Submit as `contreact run --detach` does (config validated, then the request)."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        inbox = await Inbox.open(client)
        for data in configs:
            config = parse_run_config(data)
            await inbox.send(
                InboxMessage(
                    run_id=config.run_id,
                    kind="RunRequested",
                    data={"config": config.model_dump(mode="json")},
                )
            )
    finally:
        await client.aclose()


def statuses(url: str) -> dict[str, str]:
    async def read() -> dict[str, str]:
        client = redis.asyncio.Redis.from_url(url)
        try:
            return {row["run_id"]: row.get("status", "") for row in await list_runs(client)}
        finally:
            await client.aclose()

    return asyncio.run(read())


def wait_for_the_end(stack: Stack, url: str, run_ids: list[str], timeout: float) -> None:
    ended = ("completed", "failed", "cancelled")
    stack.wait_until(
        lambda: all(statuses(url).get(r) in ended for r in run_ids),
        timeout=timeout,
        what=f"every run to end: {statuses(url)}",
    )


def check_the_record(stack: Stack, url: str, configs: list[dict[str, Any]]) -> dict[str, str]:
    """The guarantees, for every run: its cycles or a stated reason, the log folds and
    replays, the final digest equals the rebuilt one. Returns each run's status."""

    async def check() -> dict[str, str]:
        client = redis.asyncio.Redis.from_url(url)
        outcome: dict[str, str] = {}
        try:
            for data in configs:
                run_id = data["run_id"]
                events = await load_events(client, stack.data_dir / "runs", run_id)
                state = fold_all(events)
                report = replay_check(events)
                assert report.ok, f"{run_id}: {report.divergence and report.divergence.describe()}"
                meta = await client.hgetall(run_meta_key(run_id))
                assert meta[b"digest"].decode() == state.digest(), f"{run_id}: rebuild differs"
                if state.status == "completed":
                    assert state.cycle_number == data["cycle_count"] == len(state.cycle_metrics)
                else:
                    assert state.failure_reason, f"{run_id} ended {state.status} without a reason"
                outcome[run_id] = state.status
        finally:
            await client.aclose()
        return outcome

    outcome = asyncio.run(check())
    memory = stack.json("memory-rebuild", *[c["run_id"] for c in configs])
    assert memory["identical"] and not memory["output_mismatches"], memory
    return outcome


def test_kill_nine_of_every_service_at_random_points_across_twenty_runs(
    redis_url: str, tmp_path: Path
) -> None:
    """Two orchestrators (started at once), two LLM workers, two memory services and
    the embedder; 20 runs; a kill -9 every few seconds, each kind of service several
    times; the supervisor restarts each."""
    configs = [chaos_config(f"chaos-{n:02d}", diversity=n % 4 == 0) for n in range(20)]
    args = ("--orchestrators", "2", "--llm-workers", "2", "--memory-workers", "2")
    with running_stack(tmp_path, redis_url, *args, env=QUICK_RECLAIM) as stack:
        client = redis.Redis.from_url(redis_url)
        stack.wait_until(lambda: client.zcard(ORCHESTRATOR_REPLICAS) == 2, what="2 replicas")
        asyncio.run(submit_all(redis_url, configs))
        victims = ["orchestrator", "orchestrator-2", "llm-worker", "llm-worker-2", "memory",
                   "memory-2", "embedder"]  # fmt: skip
        chooser = random.Random(6)
        kills: dict[str, int] = dict.fromkeys(victims, 0)
        order = victims * 2 + chooser.choices(victims, k=4)
        chooser.shuffle(order)
        for victim in order:
            time.sleep(chooser.uniform(1.0, 3.5))
            os.kill(stack.pid_of(victim), signal.SIGKILL)
            kills[victim] += 1
        wait_for_the_end(stack, redis_url, [c["run_id"] for c in configs], timeout=420)
        outcome = check_the_record(stack, redis_url, configs)
        assert set(outcome.values()) == {"completed"}, outcome
        rows = {row["process"]: row for row in stack.json("status")["processes"]}
        for victim, count in kills.items():
            assert rows[victim]["restarts"] >= count and rows[victim]["alive"], rows[victim]
        client.close()


def test_redis_restarted_from_its_append_only_file_with_nobody_watching(tmp_path: Path) -> None:
    """The local Redis `contreact up` supervises: a clean SHUTDOWN, then a kill -9,
    while runs go on. The supervisor restarts it from its append-only file, every
    service reconnects on its own, and the runs end."""
    configs = [chaos_config(f"redis-{n}", cycles=5) for n in range(4)]
    with running_stack(tmp_path, None, env=QUICK_RECLAIM) as stack:
        url = (stack.data_dir / "redis.url").read_text().strip()
        asyncio.run(submit_all(url, configs[:2]))
        stack.wait_until(lambda: "running" in statuses(url).values(), what="runs to start")
        with contextlib.suppress(redis.ConnectionError):  # it goes away while answering
            redis.Redis.from_url(url).shutdown(nosave=False)
        stack.wait_until(lambda: _answers(url), timeout=60, what="Redis back after SHUTDOWN")
        asyncio.run(submit_all(url, configs[2:]))
        time.sleep(3)
        os.kill(stack.pid_of("redis"), signal.SIGKILL)
        stack.wait_until(lambda: _answers(url), timeout=60, what="Redis back after kill -9")
        wait_for_the_end(stack, url, [c["run_id"] for c in configs], timeout=300)
        outcome = check_the_record(stack, url, configs)
        assert set(outcome.values()) == {"completed"}, outcome
        rows = {row["process"]: row for row in stack.json("status")["processes"]}
        assert rows["redis"]["restarts"] == 2
        for service in ("orchestrator", "llm-worker", "memory", "embedder"):
            assert rows[service]["alive"], rows[service]


def test_a_150_second_llm_call_runs_exactly_once(redis_url: str, tmp_path: Path) -> None:
    """Far longer than the reclaim time (3 s here), with a second worker waiting: the
    worker keeps its claim fresh, so the call is made once and its answer taken."""
    with running_fake_ollama(["slow-70b"]) as fake:
        fake.reply("After a long think: I am here.", delay_s=150)
        config = tmp_path / "slow.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "run_id": "slow-call",
                    "model_name": "slow-70b",
                    "cycle_count": 1,
                    "backend": "ollama",
                    "ollama_client_config": {"host": fake.host},
                    "diversity": {"enabled": False},
                }
            )
        )
        with running_stack(tmp_path, redis_url, "--llm-workers", "2", env=QUICK_RECLAIM) as stack:
            started = time.monotonic()
            run = stack.cli("run", str(config), timeout=400)
            assert run.returncode == 0, run.stdout + run.stderr
            assert time.monotonic() - started >= 150
            show = stack.json("show", "slow-call")
        assert len(fake.chat_requests()) == 1
        assert show["reflection_history"] == ["After a long think: I am here."]
        assert show["cycle_metrics"][0]["llm_calls"] == 1


def test_a_poison_result_fails_its_task_and_the_run_still_completes(stack: Stack) -> None:
    """A forged answer to the pending LLM call that is not an answer at all: the run
    refuses it (TaskFailed, kept in the dead letters), sends the call again, and takes
    the real answer when it comes."""
    data = chaos_config("poisoned", cycles=1)
    data["script"]["replies"] = [{"content": "The real answer.", "latency_ms": 4000}]
    redis_url = stack.redis_url
    asyncio.run(submit_all(redis_url, [data]))
    client = redis.Redis.from_url(redis_url)

    def waiting_on_llm() -> bool:
        events = asyncio.run(_events(redis_url, "poisoned"))
        return bool(events) and events[-1].type == "LLMRequested"

    stack.wait_until(waiting_on_llm, what="the LLM call")
    task_id = asyncio.run(_events(redis_url, "poisoned"))[-1].task_id
    poison = InboxMessage(
        run_id="poisoned",
        kind="LLMResponded",
        causation_id=task_id,
        data={"message": {"content": {"not": "text"}}, "usage": {}, "model": "x"},
    )
    asyncio.run(_send(redis_url, poison))
    stack.wait_until(lambda: statuses(redis_url).get("poisoned") == "completed", timeout=120,
                     what="the run to complete")  # fmt: skip
    events = asyncio.run(_events_anywhere(stack, redis_url, "poisoned"))
    types = [e.type for e in events]
    assert "TaskFailed" in types and "TaskRetried" in types
    assert fold_all(events).reflection_history == ("The real answer.",)
    letters = client.xrange("deadletter")
    assert any(b"rejected" in fields[b"reason"] for _, fields in letters)
    assert replay_check(events).ok
    client.close()


def test_a_service_that_cannot_start_is_named_by_up(redis_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = stack_environment(
        data_dir, redis_url=redis_url, CONTREACT_EMBED_MODEL_PATH=str(tmp_path / "no-such-model")
    )
    stack = Stack(env=env, data_dir=data_dir, workdir=tmp_path)
    try:
        up = stack.cli("up", "--wait", "60")
        assert up.returncode == 2
        assert "embedder keeps exiting at start" in up.stderr
        assert "Traceback" not in up.stderr and up.stderr.count("\n") == 1
        rows = {r["process"]: r for r in stack.json("status")["processes"]}
        assert rows["embedder"]["restarts"] >= 2 and rows["orchestrator"]["alive"]
    finally:
        down = stack.cli("down")
        assert "supervisor: stopped" in down.stdout


def test_a_stale_pid_file_neither_skips_up_nor_kills_a_stranger(
    redis_url: str, tmp_path: Path
) -> None:
    """After a reboot the pid file names a pid that another program now has."""
    import subprocess
    import sys

    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        pids = tmp_path / "data" / "pids"
        pids.mkdir(parents=True)
        (pids / "supervisor.pid").write_text(json.dumps({"pid": stranger.pid, "start_ticks": 1}))
        with running_stack(tmp_path, redis_url) as stack:
            assert stack.pid_of("supervisor") != stranger.pid
        assert stranger.poll() is None  # `down` did not touch it
    finally:
        stranger.kill()
        stranger.wait()


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
        return False


async def _events(url: str, run_id: str) -> list[Any]:
    client = redis.asyncio.Redis.from_url(url)
    try:
        return await RunLog(client).events(run_id)
    finally:
        await client.aclose()


async def _events_anywhere(stack: Stack, url: str, run_id: str) -> list[Any]:
    client = redis.asyncio.Redis.from_url(url)
    try:
        return await load_events(client, stack.data_dir / "runs", run_id)
    finally:
        await client.aclose()


async def _send(url: str, message: InboxMessage) -> None:
    client = redis.asyncio.Redis.from_url(url)
    try:
        await (await Inbox.open(client)).send(message)
    finally:
        await client.aclose()
