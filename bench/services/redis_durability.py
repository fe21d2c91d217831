"""The cost of the failover durability (issue 32): a step through the services with
the orchestrator's ``WAIT`` for one replica after each run-log append
(``REDIS_WAIT_REPLICAS=1``: the tasks go out in a second round trip, once the replica
holds the events that call for them) against the same step without it, both through
three sentinels to one primary with one replica (``contreact_bus.failover.local_sentinels``),
measured in the same run.

Two sets of services (orchestrator, LLM worker, memory service), one per setting, each
on its own database of the same Redis (replication and ``WAIT`` are the server's);
runs alternate between them, one at a time, so the load of the machine falls on both
alike. A run is a scripted ReAct run whose every step calls ``list`` (a memory tool):
a step is an LLM call plus a tool call, two appends and so two ``WAIT``s. Per step:
the time between the run's ``RunStarted`` and its last event (the orchestrator's own
timestamps) over its model calls; the median of the repeats.

Figure: per step, WAIT 1 / none (no target: the issue asks for the figure).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
from pathlib import Path
from typing import Any

import redis

from bench._support import figure, header, ratio, row, services, smoke_args, use_smoke_sizes
from bench.bus_overhead import run_through_services, tool_config
from contreact_bus.connection import connect
from contreact_bus.failover.local_sentinels import SentinelGroup, running_sentinel_group
from contreact_events.catalog import Event

STEPS = 200
REPEATS = 7
SETTINGS = {"none": "0", "WAIT 1": "1"}


def per_step(events: list[Event]) -> float:
    started = next(e for e in events if e.type == "RunStarted")
    calls = sum(1 for e in events if e.type == "LLMResponded")
    return (events[-1].ts - started.ts).total_seconds() / calls


async def one_run(group: SentinelGroup, db: int, name: str) -> float:
    client = await connect(group.address(db))
    try:
        return per_step(await run_through_services(client, tool_config(STEPS, name), 600, 0.05))
    finally:
        await client.aclose()


waited: dict[str, int] = {}
"""``WAIT`` commands the primary ran during each setting's measured runs."""


def wait_calls(group: SentinelGroup) -> int:
    client = redis.Redis.from_url(group.url())
    try:
        stats: Any = client.info("commandstats")
        return int(stats.get("cmdstat_wait", {}).get("calls", 0))
    finally:
        client.close()


def measure(group: SentinelGroup, workdir: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in SETTINGS}
    waited.update({label: 0 for label in SETTINGS})
    with contextlib.ExitStack() as stack:
        for db, replicas in enumerate(SETTINGS.values()):
            env = {**group.env(db), "REDIS_WAIT_REPLICAS": replicas}
            env.pop("REDIS_URL")
            stack.enter_context(services(group.url(db=db), workdir / f"db{db}", extra_env=env))
        order = list(enumerate(SETTINGS))
        for repeat in range(REPEATS + 1):  # the first of each: a warm-up, dropped
            for db, label in order if repeat % 2 else order[::-1]:
                waits = wait_calls(group)
                took = asyncio.run(one_run(group, db, f"-{db}-{repeat}"))
                if repeat:
                    times[label].append(took)
                    waited[label] += wait_calls(group) - waits
    return times


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.services.redis_durability")
    header("Redis durability: WAIT for a replica after each run-log append")
    if args.smoke:
        use_smoke_sizes(globals(), STEPS=8, REPEATS=1)
    with tempfile.TemporaryDirectory(prefix="bench-sentinel-") as folder:
        workdir = Path(folder)
        with running_sentinel_group(workdir / "redis", replicas=1) as group:
            times = measure(group, workdir)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        row(f"{label}: per step (LLM call + tool call)", value * 1000, "ms",
            f"median of {REPEATS} runs of {STEPS} steps")  # fmt: skip
    for label, count in waited.items():
        row(f"{label}: WAITs per step", count / (REPEATS * STEPS), "")
    figure(
        "per step, WAIT 1 / none",
        ratio("per step, WAIT 1 / none", medians["WAIT 1"], medians["none"]),
        "x",
        f"a step (LLM call + tool call) through the services, {STEPS} steps, "
        "primary + 1 replica through 3 sentinels on loopback",
    )
    figure("per step, none", medians["none"] * 1000, "ms")
    figure("per step, WAIT 1", medians["WAIT 1"] * 1000, "ms")


if __name__ == "__main__":
    main()
