"""Faults: kill -9 of every kind of service at random points across twenty runs.

The fault suite, split over ``test_faults_*.py`` so that xdist spreads it (the common
parts are in ``tests/support/faults.py``): every service a real process under
`contreact up`'s supervisor, on a real Redis, broken on purpose while runs go on.
Afterwards every run has exactly its cycle count or a failure with a stated reason,
every log folds and replays, the orchestrator's final state equals the rebuilt one,
and no memory effect was applied twice. Nobody runs `contreact up` again after a
fault: the platform recovers alone."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from contreact_events.names import ORCHESTRATOR_REPLICAS
from tests.support.faults import (
    QUICK_RECLAIM,
    chaos_config,
    check_the_record,
    submit_all,
    wait_for_the_end,
)
from tests.support.stack import running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


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

        # The supervisor restarts a process killed soon after its start with a backoff
        # (0.5 s doubling to 30 s): the runs may end, through the other replicas, before
        # the last victim is back. Every victim comes back (a generous guard of a hang).
        def rows() -> dict[str, dict[str, Any]]:
            return {row["process"]: row for row in stack.json("status")["processes"]}

        stack.wait_until(
            lambda: all(rows()[victim]["alive"] for victim in kills), 120, "every victim back"
        )
        final = rows()
        for victim, count in kills.items():
            assert final[victim]["restarts"] >= count, final[victim]
        client.close()
