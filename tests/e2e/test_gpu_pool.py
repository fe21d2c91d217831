"""GPU hosts as one pool: three Ollama stand-ins (processes of their own, on real
sockets) serve one model to six runs under `contreact up`; one host is killed with
SIGKILL mid-run.

Before the kill the runs are spread two a host and each run's calls all go to one host;
after it, the dead host's runs move to the others and stay there, every run completes,
every log folds and replays, the orchestrator's final state equals the rebuilt one, and
no memory effect was applied twice (``tests/support/faults.py``). The run logs record
which host served each call (``LLMResponded.host``), and `contreact runs` and the
experiment table show it."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog.cycle import LLMResponded
from tests.support.faults import (
    DEADLINES,
    QUICK_RECLAIM,
    check_the_record,
    events_anywhere,
    live_events,
    submit_all,
    wait_for_the_end,
)
from tests.support.pool_hosts import stand_in_hosts
from tests.support.stack import running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MODEL = "pool-model"


def pool_config(run_id: str, pool: list[str]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model_name": MODEL,
        "cycle_count": 5,
        "backend": "ollama",
        "ollama_client_config": {"hosts": pool, "connect_timeout_s": 2.0, "timeout_s": 60.0},
        "diversity": {"enabled": False},
        "deadlines": DEADLINES,
    }


def served(events: list[Any]) -> list[str]:
    """The host of each of the run's calls, in order."""
    return [e.host or "" for e in events if isinstance(e, LLMResponded)]


def test_a_pool_spreads_runs_keeps_each_on_its_host_and_moves_them_off_a_dead_one(
    redis_url: str, tmp_path: Path
) -> None:
    with stand_in_hosts(3, MODEL, latency_s=0.3) as hosts:
        pool = [h.url for h in hosts]
        limits = {url: {"parallel": 2, "max_loaded_models": 1} for url in pool}
        env = {
            **QUICK_RECLAIM,
            "CONTREACT_LLM_HOSTS": json.dumps(limits),
            "CONTREACT_LLM_HOST_DOWN_S": "3",  # the dead host is tried again, and fails again
        }
        configs = [pool_config(f"pool-{n}", pool) for n in range(6)]
        ids = [c["run_id"] for c in configs]
        with running_stack(tmp_path, redis_url, "--llm-workers", "2", env=env) as stack:
            asyncio.run(submit_all(redis_url, configs))

            def calls_made() -> list[list[str]]:
                return [served(asyncio.run(live_events(redis_url, r))) for r in ids]

            # every run placed, and mid-run (10 calls each: a note and a reflection a cycle)
            stack.wait_until(lambda: all(len(c) >= 2 for c in calls_made()), timeout=120,
                             what="every run's first two calls")  # fmt: skip
            victim = calls_made()[0][0]  # the host of the first run
            next(h for h in hosts if h.url == victim).kill()
            wait_for_the_end(stack, redis_url, ids, timeout=300)
            outcome = check_the_record(stack, redis_url, configs)
            listing = {row["run_id"]: row for row in stack.json("runs")}
        assert set(outcome.values()) == {"completed"}, outcome
        logs = {r: served(asyncio.run(events_anywhere(stack, redis_url, r))) for r in ids}

    firsts = {r: logs[r][0] for r in ids}
    assert Counter(firsts.values()) == Counter(dict.fromkeys(pool, 2)), firsts  # even
    moved = 0
    for run_id, calls in logs.items():
        assert len(calls) == 10 and set(calls) <= set(pool), (run_id, calls)
        stretches = [host for host, _ in groupby(calls)]
        # sticky: one host, or the dead one then one other (never back, never a third)
        assert len(stretches) <= 2, (run_id, calls)
        if len(stretches) == 2:
            assert stretches[0] == victim != stretches[1], (run_id, calls)
            moved += 1
        else:
            assert stretches[0] != victim, (run_id, calls)  # its host never died
        assert listing[run_id]["host"] == calls[-1]  # the listing shows the last host
    assert moved == 2  # the dead host's two runs moved
