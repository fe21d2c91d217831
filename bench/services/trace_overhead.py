"""Trace overhead (issue 33): what sending the run logs as OpenTelemetry spans adds to
the orchestrator's cost per step.

A real orchestrator in this process on a private Redis drives scripted runs (the
test answers each task as the workers would, at once: ``tests/support/traced_runs.py``),
each step one input handled: fold, decide, append to the run log, send the task. The
same runs with tracing off (no endpoint: nothing of OpenTelemetry loaded) and on
(spans built from each append and sent over OTLP/HTTP, by the SDK's batch processor,
to a bare receiver in another process that takes them with 200), alternating off and
on so both see the same machine; the time per step is the median of the repeats, the
last batch of spans flushed inside the timed part of the "on" runs.

Target: tracing on <= 1.10x off per step.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import redis.asyncio as aioredis

from bench._support import (
    header,
    ratio,
    redis_server,
    row,
    smoke_args,
    stop_process,
    use_smoke_sizes,
    verdict,
)
from contreact_bus.traces import RunTraces, open_traces
from tests.support.traced_runs import drive_run, orchestrator_with, otlp_sink_process

CYCLES = 10
RUNS = 4
"""Runs per repeat (each of CYCLES cycles, four inputs a cycle: two LLM answers, two
tool results)."""
REPEATS = 5
TARGET = 1.10


async def one_repeat(
    redis: aioredis.Redis, archive: Path, traces: RunTraces | None, label: str
) -> float:
    """Seconds per step of RUNS runs driven by one orchestrator."""
    await redis.flushdb()
    orchestrator = await orchestrator_with(redis, archive, traces, f"bench-{label}")
    steps = 0
    started = time.perf_counter()
    for index in range(RUNS):
        steps += await drive_run(orchestrator, f"{label}-{index}", CYCLES)
    if traces is not None:
        traces.flush()
    return (time.perf_counter() - started) / steps


async def measure(url: str, endpoint: str, archive: Path) -> dict[str, list[float]]:
    redis = aioredis.Redis.from_url(url)
    traces = open_traces(endpoint, "contreact-orchestrator")
    assert traces is not None
    times: dict[str, list[float]] = {"off": [], "on": []}
    try:
        await one_repeat(redis, archive, None, "warm-up")
        for repeat in range(REPEATS):
            times["off"].append(await one_repeat(redis, archive, None, f"off{repeat}"))
            times["on"].append(await one_repeat(redis, archive, traces, f"on{repeat}"))
    finally:
        traces.close()
        await redis.aclose()
    if traces.failed_exports:
        raise SystemExit(f"bench: the receiver refused {traces.failed_exports} batch(es)")
    return times


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.services.trace_overhead")
    header("trace overhead (OpenTelemetry spans from the run log)")
    if args.smoke:
        use_smoke_sizes(globals(), CYCLES=2, RUNS=1, REPEATS=1)
    sink, endpoint = otlp_sink_process()
    try:
        with redis_server() as url, tempfile.TemporaryDirectory() as archive:
            times = asyncio.run(measure(url, endpoint, Path(archive)))
    finally:
        stop_process(sink)
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    row("tracing off: per step", off * 1e3, "ms")
    row("tracing on: per step", on * 1e3, "ms")
    value = ratio("tracing on / off, per step", on, off)
    verdict(
        "trace overhead",
        value <= TARGET,
        f"{value:.2f}x per step with spans sent over OTLP (target <= {TARGET:.2f}x)",
        value=round(value, 3),
        unit="x",
        target=f"<= {TARGET:.2f}",
    )


if __name__ == "__main__":
    main()
