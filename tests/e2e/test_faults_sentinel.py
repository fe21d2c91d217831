"""Faults: the Redis primary killed mid-experiment, with replicas and Sentinel
(issue 32). Every service and the CLI reach Redis through three sentinels
(``REDIS_SENTINELS``); the orchestrator and the assessor ``WAIT`` for one replica after
the writes that acknowledge work (``REDIS_WAIT_REPLICAS=1``). The primary is killed
(SIGKILL) while every run is running; a replica is promoted; nobody restarts anything.
Every run completes, exactly its cycles, each log folds and replays, each final digest
equals the rebuilt state, and no memory effect was applied twice or lost
(``memory-rebuild``), and the dashboard, which reads without waiting for replicas and
may have read what the failover lost, shows each run as its log has it. The time from
the kill to the runs moving again is printed.

The issue asks for 50 running runs: ``CONTREACT_TEST_FAILOVER_RUNS`` sets the count
(default ``RUNS``, see its note)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis

from contreact_bus.failover.local_sentinels import running_sentinel_group
from contreact_bus.runs import load_events
from contreact_events.core.fold import fold_all
from contreact_events.history.run_summary import run_summary
from contreact_events.names import run_log_key
from tests.support.faults import (
    QUICK_RECLAIM,
    chaos_config,
    check_the_record,
    statuses,
    submit_all,
    wait_for_the_end,
)
from tests.support.stack import Stack, running_stack

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


def logged_summaries(stack: Stack, url: str, run_ids: list[str]) -> dict[str, Any]:
    """Each run's summary (the listing's and the run page's row) as its log folds."""

    async def read() -> dict[str, Any]:
        client = redis.asyncio.Redis.from_url(url)
        try:
            return {
                run_id: run_summary(
                    fold_all(await load_events(client, stack.data_dir / "runs", run_id))
                ).model_dump(mode="json")
                for run_id in run_ids
            }
        finally:
            await client.aclose()

    return asyncio.run(read())


def dashboard_disagrees(stack: Stack, logged: dict[str, Any]) -> dict[str, Any]:
    """The runs whose row in the dashboard's JSON (``/runs/ID.json``) differs from the
    log's summary, or carries a projection error: what differs."""
    port = stack.env["CONTREACT_UI_PORT"]
    out = {}
    for run_id, summary in logged.items():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/{run_id}.json") as reply:
            shown = json.loads(reply.read())["run"]
        differs = {k: (shown.get(k), v) for k, v in summary.items() if shown.get(k) != v}
        if differs or shown.get("projection_error"):
            out[run_id] = differs or shown["projection_error"]
    return out


def test_the_primary_killed_mid_experiment_loses_nothing(tmp_path: Path) -> None:
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
            logged = logged_summaries(stack, url, run_ids)
            shown = time.monotonic()
            guard = shown + 60  # only against a hang: the dashboard polls every 0.25 s
            while (differs := dashboard_disagrees(stack, logged)) and time.monotonic() < guard:
                time.sleep(0.2)
            assert not differs, differs
            again = sum(
                path.read_text(errors="replace").count("projecting it again from its log")
                for path in (stack.data_dir / "logs").glob("*")
            )
            print(
                f"the dashboard agreed with the logs {time.monotonic() - shown:.1f} s after "
                f"their end ({again} run(s) projected again from their logs)"
            )
            rows = {row["process"]: row for row in stack.json("status")["processes"]}
            for service in ("orchestrator", "llm-worker", "memory", "embedder", "ui", "assessor"):
                assert rows[service]["alive"] and not rows[service]["restarts"], rows[service]
