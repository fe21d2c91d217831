"""The assessment matrix: 6 models x 3 replicas (18 histories) rated by each of the 6
models (108 ratings) through rq and the LLM worker, against an Ollama stand-in that
takes 5 s to load a model and holds 2 at once, against the lower bound.

The host is ``tests/support/ollama_host.py`` (it schedules like Ollama: a queue taken
in order, a model not loaded is loaded when there is room, else the least recently
used is unloaded) on a real socket, spoken to by the LLM worker's real ``ollama``
client. It serves 3 calls of a model at once and answers each after 1 s. The
histories are finished runs made by the core's own driver and archived; the
services are one LLM worker and 8 assessors (rq workers, as `contreact up
--assessors 8` starts them) as processes on a private Redis: the host runs 6 calls
at once (2 models x 3), and 2 more jobs each prepare their next call while those
run, so that a call's end finds the next one waiting (with 6, each call's turnaround
through rq and the job, about 0.2 s here, left the host idle: 1.15-1.2x). The
ratings are enqueued as `contreact assess --experiment` does: grouped by evaluator,
two evaluators at a time (``--models-at-once 2``, the host's room).

Lower bound: each of the 6 evaluator models must be loaded once (5 s), then its 18
calls take 6 s (3 at once); the host holds 2 models, so two such lanes:
6 x (5 s + 6 s) / 2 = 33 s. Target: the makespan within 1.1x the lower bound, with 6
loads (one per evaluator).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

from bench._support import (
    add_smoke_flag,
    header,
    ratio,
    redis_server,
    row,
    start_module,
    stop_process,
    use_smoke_sizes,
    verdict,
    wait_for_heartbeats,
)
from contreact_bus.assessments.evaluators import named_evaluator
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue, queue
from contreact_events.names import run_assessments_key
from tests.support.assessing import archive_runs, finished_run
from tests.support.ollama_host import running_ollama_host

MODELS = [f"model-{n}:7b" for n in range(1, 7)]
REPLICAS = 3
CALL_S = 1.0
LOAD_S = 5.0
MAX_LOADED = 2
PARALLEL = 3
ASSESSORS = 8
TARGET = 1.1


def lower_bound() -> float:
    histories = len(MODELS) * REPLICAS
    lane = LOAD_S + -(-histories // PARALLEL) * CALL_S
    return len(MODELS) * lane / MAX_LOADED


async def rate_matrix(url: str, data: Path, host: str) -> float:
    runs = [
        finished_run(f"bench-m{n}-{r}", model, "unused")
        for n, model in enumerate(MODELS, 1)
        for r in range(REPLICAS)
    ]
    states = archive_runs(data / "runs", runs)
    evaluators = [named_evaluator(model, "ollama", host=host) for model in MODELS]
    wanted = [Wanted(s.run_id, "pei", ev) for s in states for ev in evaluators]
    client = aioredis.Redis.from_url(url)
    connection = redis.Redis.from_url(url)
    try:
        t0 = time.monotonic()
        # (the host answers reflections, no level: the follow-up question is left off,
        # so each rating is one call, as the lower bound counts them)
        await enqueue(
            client,
            queue(connection),
            wanted,
            policy=JobPolicy(),
            models_at_once=MAX_LOADED,
            follow_up=False,
        )
        streams = [run_assessments_key(s.run_id) for s in states]
        while True:  # every record is written once: count the runs' streams' entries
            async with client.pipeline(transaction=False) as pipe:
                for stream in streams:
                    pipe.xlen(stream)
                done = sum(await pipe.execute())
            if done == len(wanted):
                return time.monotonic() - t0
            await asyncio.sleep(0.05)
    finally:
        await client.aclose()
        connection.close()


def measure(url: str, workdir: Path) -> dict[str, Any]:
    with running_ollama_host(
        MODELS,
        num_parallel=PARALLEL,
        max_loaded=MAX_LOADED,
        load_s=LOAD_S,
        latency_s=lambda _model: CALL_S,
    ) as host:
        limits = {host.host: {"parallel": PARALLEL, "max_loaded_models": MAX_LOADED}}
        env = {
            **os.environ,
            "REDIS_URL": url,
            "CONTREACT_DATA_DIR": str(workdir),
            "CONTREACT_LLM_HOSTS": json.dumps(limits),
            "PYTHONUNBUFFERED": "1",
        }
        logs = workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        procs = {"llm-worker": start_module("contreact_llm", env, logs / "llm-worker.log")}
        for n in range(ASSESSORS):
            procs[f"assessor-{n}"] = start_module(
                "contreact_assessor", env, logs / f"assessor-{n}.log"
            )
        try:
            wanted = {"llm-worker": 1, "assessor": ASSESSORS}
            wait_for_heartbeats(url, wanted, procs, logs, timeout_s=120)
            elapsed = asyncio.run(rate_matrix(url, workdir, host.host))
        finally:
            for proc in procs.values():
                stop_process(proc)
        loads = [model for _t, model in host.loads]
        t0 = min(t for t, _m in host.loads)
        lanes = {
            model: (
                round(loaded - t0, 1),
                round(min(c.start for c in host.calls if c.model == model) - t0, 1),
                round(max(c.end for c in host.calls if c.model == model) - t0, 1),
            )
            for loaded, model in host.loads
        }
        return {"makespan": elapsed, "loads": loads, "calls": len(host.calls), "lanes": lanes}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.research.assessment_matrix")
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # three models on a host that holds two: one swap at least
        models = [f"model-{n}:7b" for n in range(1, 4)]
        use_smoke_sizes(
            globals(), MODELS=models, REPLICAS=1, CALL_S=0.05, LOAD_S=0.1, PARALLEL=1, ASSESSORS=2
        )
    ratings = len(MODELS) ** 2 * REPLICAS
    header(
        f"assessment matrix: {len(MODELS)} evaluators x {len(MODELS) * REPLICAS} histories "
        f"({ratings} ratings) through rq ({ASSESSORS} assessors) and the LLM worker; host "
        f"loads a model in {LOAD_S:g} s, holds {MAX_LOADED}, serves {PARALLEL} calls of a "
        f"model at once, {CALL_S:g} s each"
    )
    bound = lower_bound()
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-assess-") as tmp:
        result = measure(url, Path(tmp))
    loads = result["loads"]
    row("lower bound", bound, "s", f"({len(MODELS)} loads + the calls, {MAX_LOADED} at once)")
    row("makespan", result["makespan"], "s", f"{result['calls']} calls, {len(loads)} loads")
    share = ratio("makespan / lower bound", result["makespan"], bound)
    print(f"     loads, in order: {loads}")
    print("     per model (s after the first load): loaded, first call, last call ended")
    for model, (loaded, first, last) in result["lanes"].items():
        print(f"       {model}: {loaded}, {first}, {last}")
    once = sorted(loads) == sorted(MODELS)
    verdict(
        "assessment matrix",
        share <= TARGET and once,
        f"{share:.2f}x the lower bound (<= {TARGET}); each evaluator loaded once: {once}",
        value=share,
        unit="x",
        target=f"<= {TARGET}x",
    )


if __name__ == "__main__":
    main()
