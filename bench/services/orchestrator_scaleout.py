"""Orchestrator tier scale-out: inputs per second with 1, 2 and 4 replicas.

A synthetic load: RUNS runs of CYCLES one-call cycles (no tools, no diversity), whose
model checks and LLM calls are answered at once by a driver in this process (it reads
``tasks:llm`` and the chat route's stream in batches and writes answers in pipelines),
so the orchestrators, not the workers, are what is measured. For each replica count: a
flushed Redis, the replicas as processes (``python -m contreact_orchestrator``, 8 inbox
shards), all shards held, then every run submitted at once; the figure is input events
decided per second from the first submission to the last run's end. The baseline is 1
replica, measured in the same run.

    .venv/bin/python -m bench.services.orchestrator_scaleout [--runs 96] [--cycles 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, cast

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
)
from contreact_bus.llm_routes import known_routes
from contreact_bus.replies import Entry
from contreact_bus.streams.consumer import Consumer
from contreact_bus.streams.inbox import Inbox
from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.config import parse_run_config
from contreact_events.names import (
    INBOX_SHARDS_KEY,
    LLM_GROUP,
    LLM_TASKS_STREAM,
    ORCHESTRATOR_REPLICAS,
    run_meta_key,
)
from contreact_events.wire.answers import llm_responded, model_checked
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import InboxMessage, LLMTask

SHARDS = 8
REPLICA_COUNTS = (1, 2, 4, 1)
"""Measured in this order: 1 again at the end, for the machine's drift."""


def config(run_id: str, cycles: int) -> dict[str, Any]:
    data = {
        "run_id": run_id,
        "model_name": "synthetic",
        "cycle_count": cycles,
        "backend": "scripted",
        "script": {"replies": [{"content": "x"}]},
        "diversity": {"enabled": False},
    }
    return parse_run_config(data).model_dump(mode="json")


async def drive(redis: aioredis.Redis, stop: asyncio.Event) -> int:
    """Answer every LLM task at once: the model checks on ``tasks:llm``, the chat calls
    on their route's stream (found in ``llm:routes``, as the workers find them); return
    how many were answered."""
    consumer = Consumer(redis, LLM_TASKS_STREAM, LLM_GROUP, "driver")
    await consumer.ensure_group()
    inbox = await Inbox.open(redis)
    streams = {LLM_TASKS_STREAM: ">"}
    answered = 0
    while not stop.is_set():
        for route in (await known_routes(redis)).values():
            if route.stream not in streams:
                await Consumer(redis, route.stream, LLM_GROUP, "driver").ensure_group()
                streams[route.stream] = ">"
        reply = await redis.xreadgroup(LLM_GROUP, "driver", streams, count=256, block=200)  # type: ignore[arg-type]
        if not reply:
            continue
        batches = cast(list[tuple[bytes, list[Entry]]], reply)
        async with redis.pipeline(transaction=False) as pipe:
            for stream, batch in batches:
                for entry_id, fields in batch:
                    task = message_from_fields(LLMTask, fields)
                    if task.kind == "check":
                        message = model_checked(task, ok=True, backend="scripted", detail="bench")
                    else:
                        content = f"reflection {task.cycle}"
                        message = llm_responded(
                            task, AssistantMessage(content=content), LLMUsage(), "synthetic"
                        )
                    inbox.queue(pipe, message)
                    pipe.xack(stream, LLM_GROUP, entry_id)
                    answered += 1
            await pipe.execute()
    return answered


async def measure(url: str, replicas: int, runs: int, cycles: int) -> tuple[float, int]:
    redis = aioredis.Redis.from_url(url)
    await redis.flushdb()
    await redis.set(INBOX_SHARDS_KEY, SHARDS)
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scaleout-") as workdir:
        env = {
            **os.environ,
            "REDIS_URL": url,
            "CONTREACT_DATA_DIR": workdir,
            "CONTREACT_ORCH_SHARDS": str(SHARDS),
            "CONTREACT_ORCH_LOG_LEVEL": "WARNING",
        }
        try:
            procs = start_replicas(replicas, env, Path(workdir))
            deadline = time.monotonic() + 60
            while await redis.zcard(ORCHESTRATOR_REPLICAS) < replicas or not await _all_held(redis):
                if time.monotonic() > deadline:
                    raise SystemExit(f"bench: {replicas} replicas did not take the shards")
                await asyncio.sleep(0.1)
            stop = asyncio.Event()
            driver = asyncio.create_task(drive(redis, stop))
            inbox = await Inbox.open(redis)
            started = time.perf_counter()
            async with redis.pipeline(transaction=False) as pipe:
                for n in range(runs):
                    run_id = f"scale-{n}"
                    request = {"config": config(run_id, cycles)}
                    inbox.queue(
                        pipe, InboxMessage(run_id=run_id, kind="RunRequested", data=request)
                    )
                await pipe.execute()
            ids = [f"scale-{n}" for n in range(runs)]
            while True:
                async with redis.pipeline(transaction=False) as pipe:
                    for run_id in ids:
                        pipe.hget(run_meta_key(run_id), "status")
                    statuses = await pipe.execute()
                if all(s == b"completed" for s in statuses):
                    break
                going = (None, b"new", b"checking", b"running", b"completed")
                if any(s not in going for s in statuses):
                    ended = {i: s for i, s in zip(ids, statuses, strict=True) if s not in going}
                    raise SystemExit(f"bench: runs ended otherwise than completed: {ended}")
                if time.perf_counter() - started > 900:
                    raise SystemExit("bench: the runs did not end within 15 minutes")
                await asyncio.sleep(0.05)
            wall = time.perf_counter() - started
            stop.set()
            answered = await driver
        finally:
            for proc in procs:
                stop_process(proc)
            await redis.aclose()
    inputs = runs * (1 + 1 + cycles)  # RunRequested, ModelChecked, one answer per cycle
    assert answered == runs * (1 + cycles), answered
    return wall, inputs


def start_replicas(count: int, env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
    return [
        start_module("contreact_orchestrator", env, logs / f"orchestrator-{n}.log")
        for n in range(count)
    ]


async def _all_held(redis: aioredis.Redis) -> bool:
    from contreact_events.names import shard_lease_key

    async with redis.pipeline(transaction=False) as pipe:
        for shard in range(SHARDS):
            pipe.exists(shard_lease_key(shard))
        return all(await pipe.execute())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.services.orchestrator_scaleout")
    parser.add_argument("--runs", type=int, default=96)
    parser.add_argument("--cycles", type=int, default=60)
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    header("orchestrator scale-out: inputs decided per second, 1 / 2 / 4 replicas")
    if args.smoke:
        use_smoke_sizes(globals(), REPLICA_COUNTS=(1, 2))
        args.runs, args.cycles = 4, 3
    print(f"   {args.runs} runs x {args.cycles} one-call cycles, {SHARDS} shards, answers at once")
    rates: dict[int, float] = {}
    with redis_server() as url:
        for replicas in REPLICA_COUNTS:
            wall, inputs = asyncio.run(measure(url, replicas, args.runs, args.cycles))
            rate = inputs / wall
            row(f"{replicas} replica(s): {inputs:,} inputs in", wall, "s", f"{rate:,.0f}/s")
            rates[replicas] = (rates[replicas] + rate) / 2 if replicas in rates else rate
    base = rates[1]
    gains = {n: ratio(f"{n} replicas / 1 replica", rates[n], base) for n in rates if n > 1}
    cores = os.cpu_count() or 1
    verdict(
        "scale-out",
        all(gain >= 0.9 for gain in gains.values()),
        ", ".join(f"{n} replicas {gain:.2f}x" for n, gain in gains.items())
        + f" of one on {cores} core(s) shared "
        "with Redis and the driver (target: no loss from sharding; gains up to the cores)",
        value=min(gains.values()),
        unit="x",
        target=">= 0.9x",
    )


if __name__ == "__main__":
    main()
