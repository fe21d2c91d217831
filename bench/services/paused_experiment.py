"""A paused experiment holds nothing (issue 31): experiment A (20 runs) is submitted and
paused (`contreact pause --experiment A`) on the same LLM host as experiment B, then B
runs; B's wall time is compared with B alone, in the same process, through the services
(orchestrator, one LLM worker, memory service as processes, over a private Redis).

Every run: ``CYCLES`` cycles of a memory write and a reflection, two LLM calls answered
by the scripted backend after a fixed latency, on one host allowed ``SLOTS`` calls at
once. If A's resting runs held a worker, a host slot or a lease, B would wait behind
them. For contrast (no verdict): B again while A, resumed, competes for the same slots.

Target: B beside the paused A takes at most 1.15x B alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import redis.asyncio as aioredis
import yaml

from bench._support import (
    add_smoke_flag,
    cli,
    header,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    services,
    use_smoke_sizes,
)
from bench._support.experiments import timed_experiment
from bench.services.experiment_scaling import host, write_experiment
from contreact_bus.runs import load_events
from contreact_cli.commands.experiment import run_experiment
from contreact_cli.settings import CLISettings
from contreact_events.config.experiment import replica_letter
from contreact_events.core.fold import fold_all

PAUSED_RUNS = 20
B_RUNS = 4
SLOTS = 4
LATENCY_MS = 200
A_CYCLES = 200
"""A's runs are long: they are still running when the pause reaches them."""
TARGET = 1.15
POLL_S = 0.1


async def all_resting(client: aioredis.Redis, settings: CLISettings, run_ids: list[str]) -> bool:
    for run_id in run_ids:
        state = fold_all(await load_events(client, settings.archive_dir, run_id))
        if not state.terminal and not (state.paused and state.pending_task_id is None):
            return False
    return True


async def measure(url: str, workdir: Path) -> dict[str, float]:
    slots = {host(SLOTS): {"parallel": SLOTS, "max_loaded_models": 0}}
    env = {"CONTREACT_LLM_HOSTS": json.dumps(slots), "CONTREACT_LLM_CONCURRENCY": "64"}
    data = workdir / "data"
    settings = CLISettings(redis_url=url, data_dir=data)
    cli_env = {**os.environ, "REDIS_URL": url, "CONTREACT_DATA_DIR": str(data)}
    out: dict[str, float] = {}
    with services(url, data, extra_env=env):
        client = aioredis.Redis.from_url(url)
        try:
            alone = write_experiment(workdir, "b-alone", B_RUNS, SLOTS, LATENCY_MS)
            out["alone"] = (await timed_experiment(settings, client, alone)).wall_s
            paused = write_experiment(workdir, "a", PAUSED_RUNS, SLOTS, LATENCY_MS)
            long_a = yaml.safe_load(paused.read_text())
            paused.write_text(yaml.safe_dump({**long_a, "cycle_count": A_CYCLES}))
            code = await run_experiment(settings, paused, lambda _l: None, follow=False, wait_s=30)
            assert code == 0
            cli(cli_env, "pause", "--experiment", "a", "--reason", "bench")
            ids = [f"a-scripted-{replica_letter(i)}" for i in range(PAUSED_RUNS)]
            t0 = time.perf_counter()
            while True:  # (each run rests once the call it was in is answered)
                if await all_resting(client, settings, ids):
                    break
                await asyncio.sleep(POLL_S)
            out["to rest"] = time.perf_counter() - t0
            beside = write_experiment(workdir, "b-beside", B_RUNS, SLOTS, LATENCY_MS)
            out["beside paused"] = (await timed_experiment(settings, client, beside)).wall_s
            cli(cli_env, "resume", "--experiment", "a")
            racing = write_experiment(workdir, "b-racing", B_RUNS, SLOTS, LATENCY_MS)
            out["beside resumed"] = (await timed_experiment(settings, client, racing)).wall_s
        finally:
            await client.aclose()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.paused_experiment")
    add_smoke_flag(parser)
    if parser.parse_args(argv).smoke:
        use_smoke_sizes(globals(), PAUSED_RUNS=3, B_RUNS=2, SLOTS=2, LATENCY_MS=20)
    header(
        f"paused experiment: {PAUSED_RUNS} paused runs beside {B_RUNS} runs, "
        f"{SLOTS} slots, {LATENCY_MS} ms calls"
    )
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-pause-") as tmp:
        figures = asyncio.run(measure(url, Path(tmp)))
    row("B alone", figures["alone"], "s")
    row(f"A's {PAUSED_RUNS} runs paused and resting after", figures["to rest"], "s")
    row("B beside the paused A", figures["beside paused"], "s")
    row("B beside A resumed (contrast)", figures["beside resumed"], "s")
    value = ratio("B beside paused A / B alone", figures["beside paused"], figures["alone"])
    ratio("B beside resumed A / B alone", figures["beside resumed"], figures["alone"])
    ratio_verdict(
        "paused experiment",
        value,
        TARGET,
        f"B took {value:.2f}x its time alone beside {PAUSED_RUNS} paused runs (<= {TARGET})",
        target=f"<= {TARGET}x B alone",
    )


if __name__ == "__main__":
    main()
