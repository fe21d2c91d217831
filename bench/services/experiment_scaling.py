"""Experiment scaling: N runs submitted as one experiment, against one run alone,
through the services (orchestrator, one LLM worker, memory service as processes,
over a private Redis).

Every run: 10 cycles; each cycle is a memory write and a reflection, two LLM calls
answered by the scripted backend after a fixed latency (200 ms: a run alone takes a
little over 4 s; 1 s: a little over 20 s, the pace of a fast hosted model under load).
Diversity is off (the embedder is measured in its own benchmarks).

- one run: an experiment of one replica, median of three (per latency), submitted with
  the code `contreact experiment run --detach` runs (``run_experiment``), from the call
  until the run is completed (polling its status every 50 ms from this process).
- N runs: one experiment of N replicas of one model, on a host allowed N calls at
  once (N slots, ``CONTREACT_LLM_HOSTS``): from the call until the last run completed.
  Also shown: how long the submission itself took.

The services' logs are read at the end: every error they logged is counted (a
failed call is retried and its run still completes, only later: issue 20's 200 runs
lost seconds to "Too many connections" that no figure showed).

Targets: with 200 ms calls, 16 runs take at most 1.15x one run's wall time and 50 runs
at most 1.3x; with 1 s calls, 200 runs at most 1.3x (issue 20: the CPU per step is what
limits how many runs one orchestrator and one worker carry when the model answers fast).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench._support import (
    add_smoke_flag,
    header,
    logged_problems,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    services,
    use_smoke_sizes,
    verdict,
)
from bench._support.experiments import timed_experiment, write_then_reflect
from contreact_cli.settings import CLISettings
from tests.support.experiment_files import experiment_file

CYCLES = 10
CASES: tuple[tuple[int, int, float], ...] = ((16, 200, 1.15), (50, 200, 1.30), (200, 1000, 1.30))
"""(runs, scripted latency of each call in ms, the wall-time ratio against one run of
that latency they must stay within)."""
SINGLE_REPEATS = 3


def host(slots: int) -> str:
    return f"http://slots-{slots}:11434"


def write_experiment(folder: Path, name: str, replicas: int, slots: int, latency_ms: int) -> Path:
    script = write_then_reflect(latency_ms)
    models = [{"label": "scripted", "model_name": "scripted-model", "script": script}]
    return experiment_file(
        folder, name, models, replicas=replicas, cycles=CYCLES, backend="scripted", host=host(slots)
    )


async def measure(url: str, workdir: Path) -> dict[str, Any]:
    sizes = sorted({size for size, _, _ in CASES})
    slots = {host(n): {"parallel": n, "max_loaded_models": 0} for n in sizes}
    # The worker may run as many calls at once as the largest experiment has runs.
    concurrency = str(max(64, *sizes))
    env = {"CONTREACT_LLM_HOSTS": json.dumps(slots), "CONTREACT_LLM_CONCURRENCY": concurrency}
    settings = CLISettings(redis_url=url, data_dir=workdir / "data")
    results: dict[str, Any] = {"single": {}, "many": {}}
    with services(url, workdir / "data", extra_env=env):
        client = aioredis.Redis.from_url(url)
        try:
            for latency in sorted({latency for _, latency, _ in CASES}):
                singles = results["single"].setdefault(latency, [])
                for n in range(SINGLE_REPEATS):
                    path = write_experiment(workdir, f"one{n}-{latency}", 1, sizes[0], latency)
                    singles.append((await timed_experiment(settings, client, path)).wall_s)
            for size, latency, _ in CASES:
                path = write_experiment(workdir, f"many{size}-{latency}", size, size, latency)
                times = await timed_experiment(settings, client, path)
                results["many"][size, latency] = times.submitted_s, times.wall_s
        finally:
            await client.aclose()
    results["problems"] = logged_problems(workdir / "data")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.experiment_scaling")
    add_smoke_flag(parser)
    if parser.parse_args(argv).smoke:
        use_smoke_sizes(globals(), CYCLES=2, CASES=((3, 10, 1.15),), SINGLE_REPEATS=1)
    header(
        f"experiment scaling: {CYCLES} cycles x 2 scripted calls per run, "
        "N runs as one experiment on N slots"
    )
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-exp-") as tmp:
        results = asyncio.run(measure(url, Path(tmp)))
    problems = results["problems"]
    for service, lines in problems.items():
        row(f"errors in the {service} log", len(lines), "lines", lines[0][:90] if lines else "")
    count = sum(len(lines) for lines in problems.values())
    verdict(
        "services' logs",
        count == 0,
        f"{count} error line(s) logged by the services (0: no call failed on the way)",
        value=count,
        unit="lines",
        target="0",
    )
    for latency, samples in results["single"].items():
        single = statistics.median(samples)
        row(
            f"one run alone, {latency} ms calls (median of {SINGLE_REPEATS})",
            single,
            "s",
            "samples " + ", ".join(f"{s:.2f}" for s in samples),
        )
        row("  of which scripted latency", CYCLES * 2 * latency / 1000, "s")
    for size, latency, target in CASES:
        single = statistics.median(results["single"][latency])
        submitted, elapsed = results["many"][size, latency]
        note = f"{latency} ms calls; submitted in {submitted * 1000:.0f} ms"
        row(f"{size} runs as one experiment", elapsed, "s", note)
        value = ratio(f"{size} runs / one run", elapsed, single)
        ratio_verdict(
            f"{size} runs",
            value,
            target,
            f"{value:.2f}x one run's wall time with {latency} ms calls (<= {target})",
        )


if __name__ == "__main__":
    main()
