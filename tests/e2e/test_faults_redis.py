"""Faults: Redis restarted under the services, a poison result, and `contreact up`'s
own: a service that cannot start, a stale pid file.

The fault suite, split over ``test_faults_*.py`` so that xdist spreads it (the common
parts are in ``tests/support/faults.py``): every service a real process under
`contreact up`'s supervisor, on a real Redis, broken on purpose while runs go on.
Afterwards every run has exactly its cycle count or a failure with a stated reason,
every log folds and replays, the orchestrator's final state equals the rebuilt one,
and no memory effect was applied twice. Nobody runs `contreact up` again after a
fault: the platform recovers alone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
import redis

from contreact_events.core.fold import fold_all
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import InboxMessage
from tests.support.faults import (
    QUICK_RECLAIM,
    answers,
    chaos_config,
    check_the_record,
    events_anywhere,
    live_events,
    send_to_inbox,
    statuses,
    submit_all,
    wait_for_the_end,
)
from tests.support.stack import Stack, running_stack
from tests.support.stack_env import stack_environment

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


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
        stack.wait_until(lambda: answers(url), timeout=60, what="Redis back after SHUTDOWN")
        asyncio.run(submit_all(url, configs[2:]))
        time.sleep(3)
        os.kill(stack.pid_of("redis"), signal.SIGKILL)
        stack.wait_until(lambda: answers(url), timeout=60, what="Redis back after kill -9")
        wait_for_the_end(stack, url, [c["run_id"] for c in configs], timeout=300)
        outcome = check_the_record(stack, url, configs)
        assert set(outcome.values()) == {"completed"}, outcome
        rows = {row["process"]: row for row in stack.json("status")["processes"]}
        assert rows["redis"]["restarts"] == 2
        for service in ("orchestrator", "llm-worker", "memory", "embedder"):
            assert rows[service]["alive"], rows[service]


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
        events = asyncio.run(live_events(redis_url, "poisoned"))
        return bool(events) and events[-1].type == "LLMRequested"

    stack.wait_until(waiting_on_llm, what="the LLM call")
    task_id = asyncio.run(live_events(redis_url, "poisoned"))[-1].task_id
    poison = InboxMessage(
        run_id="poisoned",
        kind="LLMResponded",
        causation_id=task_id,
        data={"message": {"content": {"not": "text"}}, "usage": {}, "model": "x"},
    )
    asyncio.run(send_to_inbox(redis_url, poison))
    stack.wait_until(lambda: statuses(redis_url).get("poisoned") == "completed", timeout=120,
                     what="the run to complete")  # fmt: skip
    events = asyncio.run(events_anywhere(stack, redis_url, "poisoned"))
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
