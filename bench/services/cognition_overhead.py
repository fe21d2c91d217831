"""Cognition overhead (issue 17): a 10-cycle run with an operator exchange every cycle,
with the exchanges' analyses off, heuristic, and by a model, on one Ollama host that
serves one call of a model at a time (``OLLAMA_NUM_PARALLEL=1``).

The host is ``tests/support/ollama_host.py``, the stand-in that schedules like Ollama,
on a real socket, spoken to by the real ``ollama`` client of the LLM worker (which
knows the host's limits, ``CONTREACT_LLM_HOSTS``: one call of a model at a time, two
models loaded). Each cycle the model asks the operator (``send_message_to_operator``,
answered by the automatic reply), then reflects: two chat calls of ``CHAT_S`` each. An
analysis (the request with a JSON ``format``) takes ``ANALYSIS_S`` and answers a valid
analysis. The services (orchestrator, one LLM worker, memory) run as processes on a
private Redis; runs go one at a time, each timed from its request to its
``RunCompleted`` as the log stamps them (the run completes after its last analysis).

Four configurations, timed in the same process against the same host:

- ``off``: the baseline (the paper's protocol);
- ``heuristic``: decided in the core as the exchange completes;
- ``model, the run's model`` (``cognition.model`` unset): the analysis and the run's
  calls share the model's one slot. Nothing can hide that work: the host makes one call
  at a time, so the run can only be as fast as the off run plus its analyses' time on
  the host, less the few gaps between its calls (tool calls, the orchestrator). The
  figure to judge is what the scheduling adds beyond that time;
- ``model, a model of its own`` (``cognition.model: analyst:1b``): the analysis has a
  slot of its own on the same host (Ollama's limit is per model), as a small analysis
  model would. The stand-in does not model two models sharing one GPU's compute: on
  one GPU their tokens slow each other by an amount it cannot know.

Targets: a model of its own <= 1.05x off (the issue's figure); the run's model: what
the scheduling adds beyond the analyses' own host time <= 0.05x off; heuristic
<= 1.05x off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from dataclasses import dataclass
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
    verdict,
)
from bench._support.experiments import wait_until_ended
from contreact_bus.runs import load_events
from contreact_bus.streams.inbox import Inbox
from contreact_cli.settings import CLISettings
from contreact_events.config import parse_run_config
from contreact_events.wire.tasks import InboxMessage
from tests.support.ollama_host import OllamaHost, running_ollama_host

MODEL = "runner:7b"
ANALYST = "analyst:1b"
CYCLES = 10
CHAT_S = 1.0
ANALYSIS_S = 0.5
REPEATS = 2
TARGET = 1.05
SCHEDULING_TARGET = 0.05

ANALYSIS = {
    "intent": "request",
    "context_type": "continuation",
    "confidence": 0.8,
    "persistence_score": 0.4,
    "summary": "The operator tells the agent to go on.",
    "relevant_memories": [],
    "reasoning": "A short instruction to continue the thread.",
}
CONFIGS: dict[str, tuple[str, str | None]] = {
    "off": ("off", None),
    "heuristic": ("heuristic", None),
    "model, the run's model": ("model", None),
    "model, a model of its own": ("model", ANALYST),
}


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The stand-in model: an analysis for a request with a JSON format; else a
    question to the operator after the cycle's user turn, a reflection after it."""
    if body.get("format") is not None:
        return {"role": "assistant", "content": json.dumps(ANALYSIS)}
    messages = body.get("messages") or []
    cycle = sum(1 for m in messages if m.get("role") == "user")
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": f"Cycle {cycle}: I asked and went on."}
    call = {"name": "send_message_to_operator", "arguments": {"message": f"Cycle {cycle}: on?"}}
    return {"role": "assistant", "content": "", "tool_calls": [{"function": call}]}


def latency(body: dict[str, Any]) -> float:
    return ANALYSIS_S if body.get("format") is not None else CHAT_S


def run_config(run_id: str, host: str, analysis: str, model: str | None) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model_name": MODEL,
        "cycle_count": CYCLES,
        "backend": "ollama",
        "ollama_client_config": {"host": host},
        "operator": {"mode": "auto"},
        "diversity": {"enabled": False},
        "cognition": {"analysis": analysis, "model": model},
    }


@dataclass(frozen=True)
class Timed:
    wall_s: float
    analyses_on_host_s: float
    by_model: int
    """Analyses the model gave (not the heuristic standing in)."""


async def timed_run(
    url: str, settings: CLISettings, host: OllamaHost, config: dict[str, Any]
) -> Timed:
    run_id = config["run_id"]
    client = aioredis.Redis.from_url(url)
    try:
        parsed = parse_run_config(config)
        calls_before = len(host.calls)
        await (await Inbox.open(client)).send(
            InboxMessage(
                run_id=run_id,
                kind="RunRequested",
                data={"config": parsed.model_dump(mode="json")},
            )
        )
        timeout_s = 60 + CYCLES * (2 * CHAT_S + ANALYSIS_S) * 5
        await wait_until_ended(client, settings.archive_dir, [run_id], timeout_s=timeout_s)
        events = await load_events(client, settings.archive_dir, run_id)
    finally:
        await client.aclose()
    analysed = [e for e in events if e.type == "OperatorMessageAnalyzed"]
    on_host = sum(c.end - c.start for c in host.calls[calls_before:] if c.structured)
    return Timed(
        wall_s=(events[-1].ts - events[0].ts).total_seconds(),
        analyses_on_host_s=on_host,
        by_model=sum(1 for e in analysed if e.analysis.analyser == "model"),
    )


async def measure(url: str, workdir: Path, repeats: int) -> dict[str, list[Timed]]:
    with running_ollama_host(
        [MODEL, ANALYST],
        num_parallel=1,
        max_loaded=2,
        answer=answer,
        request_latency_s=latency,
    ) as host:
        limits = {host.host: {"parallel": 1, "max_loaded_models": 2}}
        settings = CLISettings(redis_url=url, data_dir=workdir)
        env = {"CONTREACT_LLM_HOSTS": json.dumps(limits)}
        with services(url, workdir, extra_env=env):
            # a first run of every kind, untimed: routes, connections, imports
            for n, (analysis, model) in enumerate(CONFIGS.values()):
                config = run_config(f"warm-{n}", host.host, analysis, model)
                await timed_run(url, settings, host, {**config, "cycle_count": 1})
            results: dict[str, list[Timed]] = {label: [] for label in CONFIGS}
            for repeat in range(repeats):  # interleaved, so drift hits all alike
                for n, (label, (analysis, model)) in enumerate(CONFIGS.items()):
                    config = run_config(f"run-{repeat}-{n}", host.host, analysis, model)
                    results[label].append(await timed_run(url, settings, host, config))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.cognition_overhead")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="runs of each kind")
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        use_smoke_sizes(globals(), CYCLES=2, CHAT_S=0.05, ANALYSIS_S=0.02)
        args.repeats = 1
    header(
        f"cognition overhead: {CYCLES} cycles, an operator exchange each; chat calls of "
        f"{CHAT_S:g} s, analyses of {ANALYSIS_S:g} s; one call of a model at a time; "
        f"median of {args.repeats}"
    )
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-cognition-") as tmp:
        results = asyncio.run(measure(url, Path(tmp), args.repeats))
    wall = {label: statistics.median(t.wall_s for t in runs) for label, runs in results.items()}
    for label, runs in results.items():
        model_made = min(t.by_model for t in runs)
        note = f"({model_made}/{CYCLES} analysed by the model)" if "model" in label else ""
        row(f"{label}: wall", wall[label], "s", note)
    off = wall["off"]
    ratios = {label: ratio(f"{label} / off", wall[label], off) for label in CONFIGS}
    own = results["model, the run's model"]
    on_host = statistics.median(t.analyses_on_host_s for t in own)
    row("the run's model: its analyses' time on the host", on_host, "s")
    added = (wall["model, the run's model"] - off - on_host) / off
    row("the run's model: added beyond that time / off", added, "x")
    complete = all(t.by_model == CYCLES for label in CONFIGS if "model" in label
                   for t in results[label])  # fmt: skip
    verdict(
        "every analysis by the model",
        complete,
        "none fell back to the heuristic",
        value="all" if complete else "not all",
        target="all",
    )
    shared = ratios["model, the run's model"]
    mine = ratios["model, a model of its own"]
    ratio_verdict(
        "analyses on a model of their own",
        mine,
        TARGET,
        f"{mine:.3f}x off (<= {TARGET})",
    )
    ratio_verdict(
        "analyses on the run's model: the scheduling's part",
        added,
        SCHEDULING_TARGET,
        f"{added:+.3f}x off beyond the analyses' {on_host:.1f} s on the host "
        f"(<= {SCHEDULING_TARGET}); whole ratio {shared:.3f}x",
    )
    heuristic = ratios["heuristic"]
    ratio_verdict(
        "heuristic analyses",
        heuristic,
        TARGET,
        f"{heuristic:.3f}x off (<= {TARGET})",
    )


if __name__ == "__main__":
    main()
