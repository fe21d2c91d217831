"""Faults: the Redis primary killed mid-experiment, with replicas and Sentinel
(issue 32). Every service and the CLI reach Redis through three sentinels
(``REDIS_SENTINELS``); the orchestrator and the assessor ``WAIT`` for one replica after
the writes that acknowledge work (``REDIS_WAIT_REPLICAS=1``). The primary is killed
(SIGKILL) while every run is running; a replica is promoted; nobody restarts anything.
Every run completes, exactly its cycles, each log folds and replays, each final digest
equals the rebuilt state, and no memory effect was applied twice or lost
(``memory-rebuild``). The time from the kill to the runs moving again is printed.

The issue asks for 50 running runs: ``CONTREACT_TEST_FAILOVER_RUNS`` sets the count
(default ``RUNS``, see its note)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import redis

from contreact_bus.failover.local_sentinels import running_sentinel_group
from contreact_events.names import run_log_key
from tests.support.faults import (
    QUICK_RECLAIM,
    chaos_config,
    check_the_record,
    statuses,
    submit_all,
    wait_for_the_end,
)
from tests.support.stack import running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNS = int(os.environ.get("CONTREACT_TEST_FAILOVER_RUNS", "12"))
"""12 in the suite (62 s on this 2-core machine at a load of 9-12); the issue's 50 passed
too (`CONTREACT_TEST_FAILOVER_RUNS=50`: 221 s, too long for every run of the suite)."""
CYCLES = 3


def logged_events(url: str, run_ids: list[str]) -> int:
    """Events in the run logs the Redis at ``url`` holds (0 for one it cannot reach)."""
    client = redis.Redis.from_url(url, socket_timeout=2)
    try:
        with client.pipeline(transaction=False) as pipe:
            for run_id in run_ids:
                pipe.xlen(run_log_key(run_id))
            return sum(pipe.execute())
    except (redis.ConnectionError, redis.TimeoutError):
        return 0
    finally:
        client.close()


def test_the_primary_killed_mid_experiment_loses_nothing(tmp_path: Path) -> None:
    import asyncio

    configs = [chaos_config(f"failover-{n}", cycles=CYCLES) for n in range(RUNS)]
    run_ids = [c["run_id"] for c in configs]
    with running_sentinel_group(tmp_path / "redis", replicas=2) as group:
        env = {**group.env(), **QUICK_RECLAIM, "REDIS_WAIT_REPLICAS": "1"}
        env.pop("REDIS_URL")
        with running_stack(tmp_path, group.url(), env=env) as stack:
            first = group.url()
            asyncio.run(submit_all(first, configs))
            stack.wait_until(
                lambda: (
                    list(statuses(first).values()).count("running") == RUNS
                    and logged_events(first, run_ids) >= 8 * RUNS
                ),
                timeout=300,
                what="every run to be running",
            )
            old = group.kill_primary()
            killed = time.monotonic()
            promoted = group.wait_for_new_primary(old)
            elected = time.monotonic()
            url = group.url(promoted)
            held = logged_events(url, run_ids)
            stack.wait_until(
                lambda: logged_events(url, run_ids) > held,
                timeout=120,
                what="the runs to move again after the failover",
            )
            moving = time.monotonic()
            print(
                f"\nfailover with {RUNS} running runs: replica promoted "
                f"{elected - killed:.1f} s after the kill; runs moving again "
                f"{moving - killed:.1f} s after it"
            )
            wait_for_the_end(stack, url, run_ids, timeout=600)
            outcome = check_the_record(stack, url, configs)
            assert set(outcome.values()) == {"completed"}, outcome
            rows = {row["process"]: row for row in stack.json("status")["processes"]}
            for service in ("orchestrator", "llm-worker", "memory", "embedder", "ui", "assessor"):
                assert rows[service]["alive"] and not rows[service]["restarts"], rows[service]
