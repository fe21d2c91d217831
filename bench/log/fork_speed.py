"""Fork: what a fork of a long run costs, through the services and in the pure core,
against the parent's own read and fold measured in the same run.

Definitions:

- parent: a scripted run of ``TARGET_EVENTS`` events (``bench.fold_speed``'s script:
  every cycle writes, lists, reads and searches its memory, so the fork's memory seed
  replays four calls a cycle), written into a private Redis; the fork is at its
  second-to-last cycle, so the child copies nearly all of it and runs one cycle.
- baseline: reading the parent back (``load_events``: XRANGE and decode), the least a
  fork must do, and ``fold_all`` of it (CPU), the unit of the core's work.
- through the services (orchestrator, LLM worker, memory service as processes):
  ``contreact fork``'s own call (``fork_run``, detached) from its start until it returns
  with the fork logged, and until the child's ``RunStarted`` (seeded, its model
  checked): medians of ``REPEATS`` forks, each to a new id.
- in the core (CPU, least of ``REPEATS``): the CLI's pre-check, the orchestrator's plan
  (``plan_fork``) and the memory service's seed calls (``memory_calls`` of the prefix),
  each in folds of the parent.

Target: the plan costs at most ``TARGET_PLAN_FOLDS`` folds of the parent (it re-keys the
prefix and folds it once), and the CLI's pre-check at most ``TARGET_CHECK_FOLDS`` (no
re-key, no fold).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench._support import (
    header,
    ratio,
    redis_server,
    row,
    services,
    smoke_args,
    use_smoke_sizes,
    verdict,
)
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_cli.commands.forks import fork_run
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.history.fork import check_fork, plan_fork
from contreact_events.history.memory_calls import memory_calls
from contreact_events.names import run_meta_key
from contreact_memory.store import MemoryStore
from tests.support.sim import make_config, say
from tests.support.store_sim import StoreSim

TARGET_EVENTS = 3_000
REPEATS = 5
TARGET_PLAN_FOLDS = 3.0
TARGET_CHECK_FOLDS = 0.5
PARENT = "bench-fork-parent"


def parent_log(target_events: int) -> list[Event]:
    """The parent: ``bench.fold_speed``'s script (17 events a cycle), under a config the
    services can go on with (the scripted backend, a reply for the child's cycle), its
    memory calls answered by a ``MemoryStore`` of its own."""
    cycles = max(3, (target_events - 3) // 17)
    config = make_config(
        run_id=PARENT,
        cycle_count=cycles,
        operator={"mode": "auto"},
        script={"replies": [{"content": "Reflection of cycle {cycle}."}], "repeat": True},
    )
    replies: list[Any] = [
        say("", ("write", {"key": "note", "value": "thoughts of this cycle"}), ("list", {})),
        say("", ("read", {"key": "note"}), ("pattern_search", {"pattern": "no"})),
        say("I kept a note and read it back; nothing else happened in this cycle."),
    ]
    with tempfile.TemporaryDirectory(prefix="bench-fork-parent-") as tmp:
        store = MemoryStore.open(Path(tmp) / "memory.db")
        try:
            sim = StoreSim(config, store)
            assert sim.drive(replies).status == "completed"
        finally:
            store.close()
    return sim.log


def least_cpu(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


async def forks_through_services(
    url: str, data_dir: Path, events: list[Event], at_cycle: int
) -> dict[str, list[float]]:
    """Each fork's seconds until ``fork_run`` returned (logged) and until the child's
    ``RunStarted`` (ready); and each read of the parent (the baseline)."""
    client = aioredis.Redis.from_url(url)
    settings = CLISettings(redis_url=url, data_dir=data_dir)
    out: dict[str, list[float]] = {"read": [], "logged": [], "ready": []}
    try:
        await RunLog(client).append(PARENT, events)
        for n in range(REPEATS):
            started = time.perf_counter()
            await load_events(client, settings.archive_dir, PARENT)
            out["read"].append(time.perf_counter() - started)
            child = f"bench-fork-{n}"
            began = datetime.now(UTC)
            started = time.perf_counter()
            await fork_run(
                settings, PARENT, at_cycle, child_id=child, follow=False, wait_s=600, out=_quiet
            )
            out["logged"].append(time.perf_counter() - started)
            await _ended(client, child)
            log = await RunLog(client).events(child)
            ready = next(e for e in log if e.type == "RunStarted" and e.ts > began)
            out["ready"].append((ready.ts - began).total_seconds())
    finally:
        await client.aclose()
    return out


def _quiet(*_: object) -> None:
    pass


async def _ended(client: aioredis.Redis, run_id: str, timeout_s: float = 600) -> None:
    """Wait for the child's end (it runs one cycle); a hang ends the benchmark."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = await client.hget(run_meta_key(run_id), "status")
        if status == b"completed":
            return
        if status in (b"failed", b"cancelled") or time.monotonic() > deadline:
            reason = await client.hget(run_meta_key(run_id), "failure_reason")
            raise RuntimeError(f"fork {run_id} ended {status!r}: {reason!r}")
        await asyncio.sleep(0.05)


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.log.fork_speed")
    header("fork: one plan per fork")
    if args.smoke:
        use_smoke_sizes(globals(), TARGET_EVENTS=300, REPEATS=1)
    events = parent_log(TARGET_EVENTS)
    at_cycle = sum(e.type == "CycleEnded" for e in events) - 1
    now = datetime.now(UTC)
    fold_s = least_cpu(lambda: fold_all(events), REPEATS)
    check_s = least_cpu(
        lambda: check_fork(events, child_run_id="child", at_cycle=at_cycle), REPEATS
    )
    plan = plan_fork(events, child_run_id="child", at_cycle=at_cycle, ts=now)
    plan_s = least_cpu(
        lambda: plan_fork(events, child_run_id="child", at_cycle=at_cycle, ts=now), REPEATS
    )
    seed_s = least_cpu(lambda: memory_calls(plan.prefix), REPEATS)
    with tempfile.TemporaryDirectory(prefix="bench-fork-") as tmp, redis_server() as url:
        data = Path(tmp) / "data"
        with services(url, data):
            timed = asyncio.run(forks_through_services(url, data, events, at_cycle))
    read = statistics.median(timed["read"])
    logged = statistics.median(timed["logged"])
    ready = statistics.median(timed["ready"])
    print(
        f"   parent: {len(events):,} events, {at_cycle + 1} cycles, forked at {at_cycle} "
        f"({plan.forked.prefix_len:,} copied, {plan.forked.memory_calls} memory calls seeded)"
    )
    row("parent read (load_events), baseline", read * 1e3, "ms", f"median of {REPEATS}")
    row("fork logged (contreact fork returns)", logged * 1e3, "ms")
    row("fork ready (the child's RunStarted)", ready * 1e3, "ms")
    ratio("fork logged / parent read", logged, read)
    ratio("fork ready / parent read", ready, read)
    row("fold_all of the parent (CPU)", fold_s * 1e3, "ms", f"least of {REPEATS}")
    row("CLI pre-check (CPU)", check_s * 1e3, "ms")
    row("orchestrator's plan (CPU)", plan_s * 1e3, "ms")
    row("memory service's seed calls (CPU)", seed_s * 1e3, "ms")
    checks = ratio("CLI pre-check / fold", check_s, fold_s, f"(target <= {TARGET_CHECK_FOLDS})")
    plans = ratio("plan / fold", plan_s, fold_s, f"(target <= {TARGET_PLAN_FOLDS})")
    ratio("seed calls / fold", seed_s, fold_s)
    verdict(
        "fork plan",
        plans <= TARGET_PLAN_FOLDS and checks <= TARGET_CHECK_FOLDS,
        f"the plan costs {plans:.2f} folds of the parent (<= {TARGET_PLAN_FOLDS}), the CLI's "
        f"pre-check {checks:.2f} (<= {TARGET_CHECK_FOLDS})",
        value=plans,
        unit="folds",
        target=f"<= {TARGET_PLAN_FOLDS} folds",
    )


if __name__ == "__main__":
    main()
