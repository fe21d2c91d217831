"""Model swaps: an experiment of 6 models x 3 replicas against one Ollama host that
takes 5 s to load a model and holds 2 at once, placed model-aware (the default)
and in a naive first-come order, against the lower bound.

The host is ``tests/support/ollama_host.py``, a stand-in that schedules like Ollama (a queue
taken in order; a model not loaded is loaded when there is room, else the least
recently used one is unloaded, an idle one first, and the queue waits meanwhile),
on a real socket, spoken to by the real ``ollama`` client of the LLM worker. It
serves 3 calls of a model at once (``OLLAMA_NUM_PARALLEL=3``) and answers each
after 1 s. Each run has 5 cycles of one call (a reflection). The services
(orchestrator, one LLM worker, memory) run as processes on a private Redis; the
worker knows the host's limits (``CONTREACT_LLM_HOSTS``).

Lower bound: each of the 6 models must be loaded once (5 s), and its 3 runs then
need 5 calls of 1 s each in turn (3 at once: 5 s); the host holds 2 models, so two
such lanes: (6 x (5 s + 5 s)) / 2 = 30 s (the issue's "total work / slots + loads":
18 runs x 5 s / 6 slots + 6 loads x 5 s / 2 at once).

Target: model-aware makespan <= 1.1 x the lower bound. The naive order is shown
for contrast (``CONTREACT_LLM_POLICY=fifo``: oldest waiting call first, the host
loads what it is asked).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench._support import (
    add_smoke_flag,
    header,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    services,
    use_smoke_sizes,
)
from bench._support.experiments import timed_experiment
from contreact_cli.settings import CLISettings
from tests.support.experiment_files import experiment_file
from tests.support.ollama_host import running_ollama_host

MODELS = [f"model-{n}:7b" for n in range(1, 7)]
REPLICAS = 3
CYCLES = 5
CALL_S = 1.0
LOAD_S = 5.0
MAX_LOADED = 2
PARALLEL = 3
TARGET = 1.1


def lower_bound() -> float:
    lane = LOAD_S + CYCLES * CALL_S * -(-REPLICAS // PARALLEL)
    return len(MODELS) * lane / MAX_LOADED


def write_experiment(folder: Path, name: str, host: str) -> Path:
    models = [{"label": f"m{n}", "model_name": model} for n, model in enumerate(MODELS, 1)]
    return experiment_file(
        folder, name, models, replicas=REPLICAS, cycles=CYCLES, backend="ollama", host=host
    )


async def makespan(url: str, workdir: Path, policy: str) -> dict[str, Any]:

    with running_ollama_host(
        MODELS,
        num_parallel=PARALLEL,
        max_loaded=MAX_LOADED,
        load_s=LOAD_S,
        latency_s=lambda _model: CALL_S,
    ) as host:
        limits = {host.host: {"parallel": PARALLEL, "max_loaded_models": MAX_LOADED}}
        env = {"CONTREACT_LLM_HOSTS": json.dumps(limits), "CONTREACT_LLM_POLICY": policy}
        data = workdir / policy
        settings = CLISettings(redis_url=url, data_dir=data)
        with services(url, data, extra_env=env):
            client = aioredis.Redis.from_url(url)
            try:
                path = write_experiment(workdir, f"swaps-{policy.replace('_', '-')}", host.host)
                times = await timed_experiment(settings, client, path, poll_s=0.1)
            finally:
                await client.flushdb()
                await client.aclose()
        loads = [(round(t - times.started, 1), model) for t, model in host.loads]
    return {"makespan": times.wall_s, "loads": loads, "max_in_flight": host.max_in_flight}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.model_swaps")
    parser.add_argument("--skip-naive", action="store_true", help="model-aware only (~40 s)")
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # three models on a host that holds two: one swap at least
        models = [f"model-{n}:7b" for n in range(1, 4)]
        use_smoke_sizes(globals(), MODELS=models, REPLICAS=1, CYCLES=1, CALL_S=0.05, LOAD_S=0.1)
        args.skip_naive = True
    header(
        f"model swaps: {len(MODELS)} models x {REPLICAS} replicas x {CYCLES} cycles of a "
        f"{CALL_S:.0f} s call; host loads a model in {LOAD_S:.0f} s, holds {MAX_LOADED}, "
        f"serves {PARALLEL} calls of a model at once"
    )
    bound = lower_bound()
    results = {}
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-swaps-") as tmp:
        for policy in ("model_aware", *(() if args.skip_naive else ("fifo",))):
            results[policy] = asyncio.run(makespan(url, Path(tmp), policy))
    row("lower bound", bound, "s", "(6 loads + the calls, 2 models at once)")
    for policy, result in results.items():
        row(f"{policy}: makespan", result["makespan"], "s", f"{len(result['loads'])} loads")
        ratio(f"{policy}: makespan / lower bound", result["makespan"], bound)
        print(f"     loads (s, model): {result['loads']}")
    aware = results["model_aware"]["makespan"] / bound
    ratio_verdict(
        "model swaps",
        aware,
        TARGET,
        f"model-aware {aware:.2f}x the lower bound (<= {TARGET})",
    )


if __name__ == "__main__":
    main()
