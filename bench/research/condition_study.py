"""The follow-up study's design: what conditions cost per call through the services,
and how long its statistics take.

1. Per call through the services (orchestrator, one LLM worker, memory service as
   processes, over a private Redis): the same grid with and without conditions, and
   with the study's tools and reports given to every run alike (the placebo's set, no
   conditions: what the axis itself costs). Each:
   4 models, 2 x R runs each, ``CYCLES`` cycles, each cycle a memory ``write`` and a
   reflection from the scripted backend with no latency (so the services' own work is
   what is timed). With conditions: 2 conditions x R replicas, each run offered the
   study's tools (``configs/tools/self-explanations.yaml``: the stressor, and the
   control or the placebo) and a self-report on every call (the ``write`` carries it,
   the orchestrator takes it off before the memory service gets the call). The
   services' CPU time (user + system, ``/proc``) and the wall time per LLM call of each
   experiment, from submission until every run completed; alternated, medians of
   ``REPEATS``. Target: the services' CPU per call with conditions at most 1.1x without
   (CPU, not wall time: on a shared machine the wall time measures the neighbours).
2. The statistics of 80 runs x 10 cycles (4 models x 2 conditions x 10 runs; each
   cycle two self-reported calls; scores known), folded with the platform's fold into
   the dataframes, then ``condition_summary`` (means with intervals, permutation tests,
   mixed models). Target: the statistics in under 5 s (median of ``REPEATS``).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
import yaml

from bench._support import (
    cpu_seconds,
    header,
    logged_problems,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    services,
    smoke_args,
    use_smoke_sizes,
    verdict,
)
from bench._support.experiments import timed_experiment
from contreact_analysis.frames import build_frames
from contreact_analysis.stats.conditions import condition_summary
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.config.strict_yaml import load_yaml
from contreact_events.protocol import paper_system_prompt
from tests.support.sim import Sim, make_config, say

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "configs/tools/self-explanations.yaml"
MODELS = 4
REPLICAS = 3
"""R: each model runs 2R runs in both grids."""
CYCLES = 10
REPEATS = 3
STATS_RUNS = 10
"""Runs per model and condition in the statistics (the study's ten)."""
STATS_CYCLES = 10
TARGET_RATIO = 1.1
TARGET_STATS_S = 5.0
HOST = "http://bench-conditions:11434"
REPORT = {"phenom_state": "strained", "phenom_aversive": 4}


KINDS = ("plain", "tools", "conditions")
"""The grids: without conditions or added tools; the study's tools and self-reports
given to every run alike (the placebo's set), no conditions; with conditions."""


def grid(name: str, kind: str) -> dict[str, Any]:
    conditions = kind == "conditions"
    arguments: dict[str, Any] = {"key": "k{cycle}", "value": "note of cycle {cycle}"}
    if kind != "plain":
        arguments.update(REPORT)
    script = {
        "repeat": True,
        "replies": [
            {"tool_calls": [{"name": "write", "arguments": arguments}]},
            {"content": "Reflection of cycle {cycle}."},
        ],
    }
    data: dict[str, Any] = {
        "experiment": name,
        "replicas": REPLICAS if conditions else 2 * REPLICAS,
        "cycle_count": CYCLES,
        "backend": "scripted",
        "ollama_client_config": {"host": HOST},
        "diversity": {"enabled": False},
        "script": script,
        "models": [{"label": f"m{i}", "model_name": f"model-{i}"} for i in range(MODELS)],
    }
    if kind == "tools":
        library = {t["name"]: t for t in load_yaml(TOOLS.read_text())["tools"]}
        added = [library["submit_data"], library["reset_state"]]
        data["tools"] = {"added": added, "self_report": {"tools": "all"}}
    if conditions:
        data["tool_definitions"] = str(TOOLS)
        data["tools"] = {"self_report": {"tools": "all"}}
        data["conditions"] = [
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {"label": "placebo", "add_tools": ["submit_data", "reset_state"]},
        ]
    return data


def services_cpu(procs: dict[str, Any]) -> float:
    """User and system CPU the service processes have used so far (``/proc``)."""
    return sum(cpu_seconds(proc.pid) for proc in procs.values())


async def measure_services(url: str, workdir: Path) -> dict[str, Any]:
    import json

    runs = MODELS * 2 * REPLICAS
    env = {
        "CONTREACT_LLM_HOSTS": json.dumps({HOST: {"parallel": runs, "max_loaded_models": 0}}),
        "CONTREACT_LLM_CONCURRENCY": str(max(64, runs)),
    }
    settings = CLISettings(redis_url=url, data_dir=workdir / "data")
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with services(url, workdir / "data", extra_env=env) as procs:
        client = aioredis.Redis.from_url(url)
        try:
            for n in range(REPEATS):  # alternated, so noise hits each alike
                for kind in KINDS:
                    path = workdir / f"{kind}{n}.yaml"
                    path.write_text(yaml.safe_dump(grid(f"{kind}{n}", kind)))
                    before = services_cpu(procs)
                    times[kind].append((await timed_experiment(settings, client, path)).wall_s)
                    cpu[kind].append(services_cpu(procs) - before)
        finally:
            await client.aclose()
    calls = runs * CYCLES * 2
    return {
        "calls": calls,
        **{f"wall_{k}": statistics.median(v) / calls for k, v in times.items()},
        **{f"cpu_{k}": statistics.median(v) / calls for k, v in cpu.items()},
        "problems": logged_problems(workdir / "data"),
    }


def study_logs() -> dict[str, list[Event]]:
    """80 finished runs (at full size) of the study's design, through the pure core:
    each cycle submit_data and the condition's tool, both with a report, then the
    reflection; the placebo's scores a point lower for three models of four."""
    library = {t["name"]: t for t in load_yaml(TOOLS.read_text())["tools"]}
    logs: dict[str, list[Event]] = {}
    for m in range(MODELS):
        for condition, second in (("control", "check_status"), ("placebo", "reset_state")):
            shift = -1 if condition == "placebo" and m < 3 else 0
            for r in range(STATS_RUNS):
                run_id = f"study-m{m}-{condition}-{r}"

                def reply(task: Any, r: int = r, shift: int = shift, second: str = second) -> Any:
                    if task.step > 1:
                        return say(f"Cycle {task.cycle}: rejected again.")
                    score = 3 + (r * 7 + task.cycle) % 3 + shift
                    report = {"phenom_state": "tense", "phenom_aversive": score}
                    return say("", ("submit_data", {"data": "x", **report}), (second, report))

                config = make_config(
                    run_id=run_id,
                    model_name=f"model-{m}",
                    experiment="study",
                    condition=condition,
                    cycle_count=STATS_CYCLES,
                    system_prompt=paper_system_prompt(),
                    tools={
                        "added": [library["submit_data"], library[second]],
                        "self_report": {"tools": "all"},
                    },
                )
                sim = Sim(config)
                state = sim.drive([reply])
                assert state.status == "completed", state.failure_reason
                logs[run_id] = sim.log
    return logs


def measure_stats() -> dict[str, Any]:
    logs = study_logs()
    frames_s, stats_s = [], []
    summary: dict[str, Any] = {}
    reports = 0
    for _ in range(REPEATS):
        t = time.perf_counter()
        frames = build_frames(logs)
        frames_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        summary = condition_summary(frames.self_reports, baseline="control")
        stats_s.append(time.perf_counter() - t)
        reports = len(frames.self_reports)
    return {
        "runs": len(logs),
        "reports": reports,
        "frames_s": statistics.median(frames_s),
        "stats_s": statistics.median(stats_s),
        "contrasts": summary["contrasts"],
    }


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.research.condition_study")
    if args.smoke:
        use_smoke_sizes(
            globals(), REPLICAS=1, CYCLES=2, REPEATS=1, STATS_RUNS=2, STATS_CYCLES=2, MODELS=2
        )
    header(
        f"conditions: {MODELS} models x 2 x {REPLICAS} runs of {CYCLES} cycles through the "
        f"services, with and without conditions; statistics of {MODELS * 2 * STATS_RUNS} runs"
    )
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-cond-") as tmp:
        m = asyncio.run(measure_services(url, Path(tmp)))
    count = sum(len(lines) for lines in m["problems"].values())
    row("errors in the services' logs", count, "lines")
    words = {
        "plain": "without conditions",
        "tools": "the tools and reports, no conditions",
        "conditions": "with conditions",
    }
    for kind in KINDS:
        row(f"{words[kind]}: services' CPU per LLM call", m[f"cpu_{kind}"] * 1000, "ms")
        row(f"{words[kind]}: wall time per LLM call", m[f"wall_{kind}"] * 1000, "ms")
    ratio("with conditions / without, wall per call", m["wall_conditions"], m["wall_plain"])
    ratio(
        "conditions / the same tools without them, CPU per call",
        m["cpu_conditions"],
        m["cpu_tools"],
    )
    value = ratio("with conditions / without, CPU per call", m["cpu_conditions"], m["cpu_plain"])
    ratio_verdict(
        "conditions per call",
        value,
        TARGET_RATIO,
        f"{value:.2f}x the services' CPU per call of the same grid without conditions "
        f"(target <= {TARGET_RATIO}; {m['calls']} calls per grid)",
    )
    s = measure_stats()
    row("study runs folded into dataframes", s["frames_s"], "s", f"({s['runs']} runs)")
    row(
        "statistics: means, permutation tests, mixed models",
        s["stats_s"],
        "s",
        f"({s['reports']} reports)",
    )
    for c in s["contrasts"]:
        row(
            f"  {c['model']}: {c['condition']} - {c['baseline']} (mixed model)",
            c["mixed_estimate"],
            "points",
            f"[{c['mixed_low']:.2f}, {c['mixed_high']:.2f}]",
        )
    verdict(
        "condition statistics",
        s["stats_s"] <= TARGET_STATS_S,
        f"{s['stats_s']:.2f} s for {s['runs']} runs (target < {TARGET_STATS_S:.0f} s)",
        value=s["stats_s"],
        unit="s",
        target=f"< {TARGET_STATS_S:.0f} s",
    )


if __name__ == "__main__":
    main()
