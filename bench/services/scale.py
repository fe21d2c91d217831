"""Scale (issue 32): 1,000 runs x 10 cycles with 10 s scripted replies as one
experiment across 2 orchestrators and 4 LLM workers, against one run alone with the
same scripted latency (the baseline, measured in the same run); and Redis memory per
finished run once the retention has passed.

The services run as processes over a private Redis (2 orchestrator replicas sharing
the 8 inbox shards, 4 LLM workers, 1 memory service; ``bench._support.services``); the
orchestrators keep a finished run's log ``RETENTION_S`` after archiving it (in place of
the default hour). Each cycle is two LLM calls answered by the scripted backend after
``--latency`` s (a memory write, then a reflection), so one run alone takes a little
over 20 x the latency. The experiment is 2 scripted models x RUNS/2 replicas on one
host allowed RUNS calls at once (``CONTREACT_LLM_HOSTS``), each worker allowed a
quarter of them and a margin. Diversity is off (the embedder has its own benchmarks).

- one run alone: an experiment of one replica, submitted with the code `contreact
  experiment run --detach` runs, from the call until it completed (statuses polled).
- the experiment: the same, from the call until the last run completed; the ratio is
  this wall time over one run's (target <= 1.3x).
- where the time went: each service process's CPU seconds over the experiment's wall
  time (a process near 1.0 is saturated), Redis's own CPU, and the machine's load
  average sampled during the experiment (the machine is shared).
- Redis memory: ``used_memory_dataset`` when every run has finished and again once
  every finished log has expired and the consumers' housekeeping has trimmed the
  streams. Judged (target: under 1 KiB a finished run): what the finished runs hold,
  the dataset's drop when, at the end, every run's listing hash, its entry in the runs'
  index and its experiment's records are deleted, per run. Shown beside it: the
  dataset's growth per run of the experiment over the dataset once the one run alone
  had passed its retention (with what does not grow with finished runs: the streams'
  last nodes, the services' extra connections), the dataset over the idle platform's
  per run, and the keys that remain, grouped by pattern, with their bytes per run
  (``MEMORY USAGE``).

    .venv/bin/python -m bench.services.scale [--runs 1000] [--cycles 10] [--latency 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

from bench._support import (
    add_smoke_flag,
    cpu_seconds,
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
from contreact_cli.config_file import load_experiment
from contreact_cli.settings import CLISettings
from contreact_events.names import (
    RUNS_INDEX,
    experiment_replicas_key,
    experiment_runs_key,
    run_log_key,
    run_meta_key,
)
from tests.support.experiment_files import experiment_file

ORCHESTRATORS = 2
LLM_WORKERS = 4
MODELS = ("scripted-a", "scripted-b")
HOST = "http://scripted-pool:11434"
RETENTION_S = 30.0
HOUSEKEEPING_S = 35.0
"""The consumers trim what is acked every 30 s: the streams are measured this long
after the last run finished (and once every finished log has expired)."""
POLL_S = 0.5
"""Statuses of the unfinished runs, one pipeline this often (at most this much is
added to each wall time: 0.25 % of one run at full size)."""
LOAD_EVERY_S = 10.0
TARGET_RATIO = 1.3
TARGET_BYTES = 1024


def write_experiment(
    folder: Path, name: str, replicas: int, models: int, cycles: int, latency_s: float
) -> tuple[Path, list[str]]:
    """The experiment file (``models`` scripted models x ``replicas``) and its run ids."""
    script = write_then_reflect(int(latency_s * 1000))
    scripted = [{"label": m, "model_name": m, "script": script} for m in MODELS[:models]]
    path = experiment_file(
        folder, name, scripted, replicas=replicas, cycles=cycles, backend="scripted", host=HOST
    )
    return path, [run.config.run_id for run in load_experiment(path)[1]]


async def redis_cpu(client: aioredis.Redis) -> float:
    info = await client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


class LoadSampler:
    """The machine's load average: at the start, then at most every ``LOAD_EVERY_S``."""

    def __init__(self) -> None:
        self.loads, self.at = [os.getloadavg()[0]], time.monotonic()

    def sample(self) -> None:
        if time.monotonic() - self.at >= LOAD_EVERY_S:
            self.at = time.monotonic()
            self.loads.append(os.getloadavg()[0])


async def timed_with_load(
    settings: CLISettings, client: aioredis.Redis, path: Path
) -> dict[str, Any]:
    """Seconds to submit, seconds until every run ended (and when each did), and the
    load averages sampled meanwhile; the benchmark stops if a run ends otherwise than
    completed."""
    load = LoadSampler()
    times = await timed_experiment(settings, client, path, poll_s=POLL_S, each_poll=load.sample)
    return {
        "submitted": times.submitted_s,
        "wall": times.wall_s,
        "loads": load.loads,
        "ends": list(times.ends_s),
    }


def dataset(client: redis.Redis) -> int:
    """``used_memory_dataset``: the data, without the connections' buffers and the
    allocator's overhead, which belong to no run."""
    return int(client.info("memory")["used_memory_dataset"])


def key_groups(client: redis.Redis, names: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Every key, grouped by its pattern (a run id in it written ``RUN``, the
    experiment's name ``EXP``): pattern -> (keys, bytes)."""
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key in client.scan_iter(count=1000):
        text = key.decode(errors="replace")
        group = groups[pattern.sub(lambda m: names[m.group(0)], text)]
        group[0] += 1
        group[1] += int(client.memory_usage(key, samples=0) or 0)
    return {k: (v[0], v[1]) for k, v in groups.items()}


def held_by_runs(client: redis.Redis, run_ids: list[str], experiments: list[str]) -> int:
    """Bytes the finished runs hold: the dataset's drop when their listing hashes, their
    index entries and their experiments' records are deleted (the last measure: it
    deletes them)."""
    before = dataset(client)
    with client.pipeline(transaction=False) as pipe:
        for run_id in run_ids:
            pipe.delete(run_meta_key(run_id))
        pipe.zrem(RUNS_INDEX, *run_ids)
        for name in experiments:
            pipe.delete(experiment_runs_key(name), experiment_replicas_key(name))
        pipe.execute()
    return before - dataset(client)


def wait_for_retention(client: redis.Redis, run_ids: list[str], finished_at: float) -> float:
    """Until every run's log has expired and the housekeeping has had its turn;
    seconds waited past the retention."""
    deadline = time.monotonic() + RETENTION_S + HOUSEKEEPING_S + 120
    while True:
        left = sum(client.exists(*[run_log_key(r) for r in run_ids[i : i + 500]])
                   for i in range(0, len(run_ids), 500))  # fmt: skip
        past = time.monotonic() - finished_at
        if left == 0 and past >= max(RETENTION_S, HOUSEKEEPING_S):
            return past - RETENTION_S
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {left} finished run logs still in Redis after the retention")
        time.sleep(1.0)


async def measure(url: str, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    per_worker = math.ceil(1.25 * args.runs / LLM_WORKERS)
    env = {
        "CONTREACT_LLM_HOSTS": json.dumps({HOST: {"parallel": args.runs, "max_loaded_models": 0}}),
        "CONTREACT_LLM_CONCURRENCY": str(max(per_worker, 8)),
        "CONTREACT_ORCH_LOG_RETENTION_S": str(RETENTION_S),
    }
    data = workdir / "data"
    settings = CLISettings(redis_url=url, data_dir=data)
    counts = {"orchestrator": ORCHESTRATORS, "llm-worker": LLM_WORKERS}
    sync = redis.Redis.from_url(url)
    out: dict[str, Any] = {"loads": {"before": os.getloadavg()}}
    with services(url, data, extra_env=env, counts=counts) as procs:
        client = aioredis.Redis.from_url(url)
        try:
            await asyncio.sleep(1.0)
            out["idle"] = dataset(sync)
            path, one = write_experiment(workdir, "alone", 1, 1, args.cycles, args.latency)
            out["one"] = await timed_with_load(settings, client, path)
            await asyncio.to_thread(wait_for_retention, sync, one, time.monotonic())
            out["base"] = dataset(sync)
            half = args.runs // len(MODELS)
            path, many = write_experiment(workdir, "scale", half, 2, args.cycles, args.latency)
            cpu0 = {name: cpu_seconds(p.pid) for name, p in procs.items()}
            redis0, own0 = await redis_cpu(client), time.process_time()
            out["many"] = await timed_with_load(settings, client, path)
            finished_at = time.monotonic()
            out["cpu"] = {n: cpu_seconds(p.pid) - cpu0[n] for n, p in procs.items()}
            out["cpu"]["redis-server"] = await redis_cpu(client) - redis0
            out["cpu"]["this benchmark"] = time.process_time() - own0
            out["finished"] = dataset(sync)
            out["waited"] = wait_for_retention(sync, one + many, finished_at)
            out["retained"] = dataset(sync)
            names = {r: "RUN" for r in one + many} | {"scale": "EXP", "alone": "EXP"}
            out["keys"] = key_groups(sync, names)
            out["held"] = held_by_runs(sync, one + many, ["alone", "scale"])
        finally:
            await client.aclose()
            sync.close()
    out["runs"] = len(one) + len(many)
    out["loads"]["after"] = os.getloadavg()
    out["problems"] = logged_problems(data)
    return out


def report(out: dict[str, Any], args: argparse.Namespace) -> None:
    one, many, runs = out["one"], out["many"], out["runs"]
    print(
        f"   {args.runs} runs x {args.cycles} cycles x 2 calls of {args.latency:g} s; "
        f"{ORCHESTRATORS} orchestrators, {LLM_WORKERS} LLM workers, 1 memory service; "
        f"retention {RETENTION_S:g} s"
    )
    before, after = out["loads"]["before"], out["loads"]["after"]
    print(f"   load average before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}; "
          f"after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")  # fmt: skip
    row("one run alone", one["wall"], "s", f"scripted latency {args.cycles * 2 * args.latency:g} s")
    note = f"submitted in {many['submitted']:.1f} s"
    row(f"{args.runs} runs as one experiment", many["wall"], "s", note)
    ends = many["ends"]
    row("  its median run ended at, / one run", ends[len(ends) // 2] / one["wall"], "x")
    row("  its 90th percentile, / one run", ends[int(len(ends) * 0.9)] / one["wall"], "x")
    loads = many["loads"]
    mean_load = sum(loads) / len(loads)
    row("load average during the experiment, mean", mean_load, "", f"max {max(loads):.2f}")
    value = ratio(f"{args.runs} runs / one run", many["wall"], one["wall"])
    print("   CPU over the experiment's wall time (1.0: one core all the time):")
    for name, seconds in sorted(out["cpu"].items(), key=lambda item: -item[1]):
        row(f"  {name}", seconds / many["wall"], "cores", f"{seconds:.1f} s CPU")
    problems = out["problems"]
    count = sum(len(lines) for lines in problems.values())
    for service, lines in problems.items():
        if lines:
            row(f"errors in the {service} log", len(lines), "lines", lines[0][:90])
    idle, finished, retained = out["idle"], out["finished"], out["retained"]
    row("dataset over idle, finished, per run", (finished - idle) / runs, "B/run")
    row("dataset over idle, after retention, per run", (retained - idle) / runs, "B/run",
        f"({out['waited']:.0f} s past the retention)")  # fmt: skip
    growth = (retained - out["base"]) / (runs - 1)
    row("after retention, growth per run of the experiment", growth, "B/run",
        "(over the dataset once the one run alone had passed its retention)")  # fmt: skip
    per_run = out["held"] / runs
    row("held by the finished runs, per run", per_run, "B/run",
        "(their listing hashes, index entries, experiments' records deleted)")  # fmt: skip
    every = sum(size for _, size in out["keys"].values())
    row("MEMORY USAGE of every key, per run", every / runs, "B/run")
    print("   keys after retention, by pattern (keys, bytes per run):")
    for pattern, (keys, size) in sorted(out["keys"].items(), key=lambda item: -item[1][1])[:12]:
        row(f"  {pattern[:44]}", size / runs, "B/run", f"{keys} key(s)")
    verdict(
        "services' logs",
        count == 0,
        f"{count} error line(s) logged by the services (0: no call failed on the way)",
        value=count,
        unit="lines",
        target="0",
    )
    ratio_verdict(
        f"{args.runs} runs",
        value,
        TARGET_RATIO,
        f"{value:.2f}x one run's wall time with {args.latency:g} s calls, {ORCHESTRATORS} "
        f"orchestrators, {LLM_WORKERS} LLM workers (<= {TARGET_RATIO}); load average "
        f"{mean_load:.1f} during the experiment",
    )
    verdict(
        "Redis memory per finished run",
        per_run < TARGET_BYTES,
        f"{per_run:,.0f} B held by a finished run after the retention (what deleting "
        f"the {runs} runs' keys and entries frees; < {TARGET_BYTES} B); the dataset grew "
        f"{growth:,.0f} B a run (streams' last nodes and the services' connections too)",
        value=per_run,
        unit="B",
        target=f"< {TARGET_BYTES} B",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.scale")
    parser.add_argument("--runs", type=int, default=1000, help="runs of the experiment (even)")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--latency", type=float, default=10.0, help="seconds per scripted call")
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.runs < 2 or args.runs % len(MODELS):
        parser.error(f"--runs {args.runs}: give an even number of runs, at least 2")
    header("scale: one experiment of many runs across orchestrators and LLM workers")
    if args.smoke:
        use_smoke_sizes(globals(), RETENTION_S=1.0, HOUSEKEEPING_S=1.0, POLL_S=0.05)
        args.runs, args.cycles, args.latency = 8, 2, 0.05
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        out = asyncio.run(measure(url, Path(tmp), args))
    report(out, args)


if __name__ == "__main__":
    main()
