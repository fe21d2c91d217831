"""``contreact``: start the services, run experiments, look at runs.

Every failure the user can fix is one line on stderr with the fix and exit code 2;
a run that ends failed or cancelled exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from contreact_bus.exceptions import BusError
from contreact_bus.redact import redact_url
from contreact_cli import commands, processes
from contreact_cli import experiment as experiment_commands
from contreact_cli.args import Parser, bounded_int, experiment, positive_seconds, run_id, text
from contreact_cli.config_file import load_config
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.exceptions import ContReActEventError


def out(line: str) -> None:
    print(line, flush=True)


def _json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def cmd_up(args: argparse.Namespace, settings: CLISettings) -> int:
    for line in processes.up(
        settings,
        llm_workers=args.llm_workers,
        memory_workers=args.memory_workers,
        orchestrators=args.orchestrators,
        embedders=args.embedders,
    ):
        out(line)
    for line in asyncio.run(commands.wait_until_up(settings, args.wait)):
        out(line)
    out("ready: every service answers; the supervisor restarts any that dies")
    return 0


def cmd_down(args: argparse.Namespace, settings: CLISettings) -> int:
    for line in processes.down(settings):
        out(line)
    return 0


def cmd_status(args: argparse.Namespace, settings: CLISettings) -> int:
    infos = processes.processes(settings)
    try:
        beats = asyncio.run(_beats(settings))
    except (BusError, OSError):
        beats = {}
    now = time.time()
    rows = [
        {
            "process": i.name,
            "pid": i.pid,
            "alive": i.alive,
            "restarts": i.restarts,
            "last_exit": i.last_exit,
            "last_error": i.last_error,
            "log": str(i.log),
        }
        for i in infos
    ]
    services = [
        {
            "service": name,
            "last_heartbeat_s_ago": round(now - ts, 1),
            "fresh": now - ts < settings.heartbeat_fresh_s,
        }
        for name, ts in beats.items()
    ]
    if args.json:
        redis_url = redact_url(settings.resolved_redis_url())
        _json({"redis_url": redis_url, "processes": rows, "services": services})
        return 0
    out(f"redis: {redact_url(settings.resolved_redis_url())}")
    for row in rows:
        restarts = f"{row['restarts']} restart(s)" if row["restarts"] else ""
        out(
            f"  {row['process']:<14} pid {row['pid']!s:<8} "
            f"{'running' if row['alive'] else 'NOT running':<12} {restarts:<14} log {row['log']}"
        )
        if row["restarts"] and row["last_error"]:
            last = safe(str(row["last_error"]), 160, one_line=True)
            out(f"  {'':<14} last death: {row['last_exit']}: {last}")
    for svc in services:
        state = "alive" if svc["fresh"] else "silent"
        out(f"  {svc['service']:<40} {state} (heartbeat {svc['last_heartbeat_s_ago']}s ago)")
    if not rows and not services:
        out("nothing is running: start the services with `contreact up`")
    return 0


async def _beats(settings: CLISettings) -> dict[str, float]:
    from contreact_bus.runs import heartbeats

    async with commands.redis_client(settings) as redis:
        return await heartbeats(redis)


def cmd_run(args: argparse.Namespace, settings: CLISettings) -> int:
    config = load_config(Path(args.config), run_id=args.run_id)
    return asyncio.run(
        commands.submit_run(settings, config, out, follow=not args.detach, wait_s=args.wait)
    )


def cmd_watch(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(commands.watch_run(settings, args.run, out))


def cmd_runs(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(commands.runs(settings))
    if args.json:
        _json(rows)
        return 0
    if not rows:
        out("no runs yet: `contreact run CONFIG` starts one")
    for row in rows:
        out(
            f"{row['run_id']:<40} {row.get('status', ''):<17} cycle "
            f"{row.get('cycle', '?')}/{row.get('cycle_count', '?')}  "
            + commands.what_ran(row.get("model", ""), row.get("ran_model", ""), row.get("backend"))
        )
    return 0


def cmd_show(args: argparse.Namespace, settings: CLISettings) -> int:
    _events, state = asyncio.run(commands.load_state(settings, args.run))
    commands.show_state(state, out, as_json=args.json)
    return 0


def cmd_reply(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(commands.reply(settings, args.run, args.text, out))


def cmd_cancel(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(commands.cancel(settings, args.run, args.reason, out))


def cmd_rebuild(args: argparse.Namespace, settings: CLISettings) -> int:
    report = asyncio.run(commands.rebuild(settings, args.run))
    if args.json:
        _json({**report.__dict__, "equal": report.equal})
    else:
        out(
            f"run {report.run_id}: {report.events} events folded, status {report.status}, "
            f"cycle {report.cycles}"
        )
        out(f"  state digest  {report.digest}")
        verdict = {True: "EQUAL", False: "DIFFERENT", None: "not compared"}[report.equal]
        out(f"  orchestrator  {report.orchestrator_digest or '-'}  {verdict}: {report.comparison}")
    return 1 if report.equal is False else 0


def cmd_replay(args: argparse.Namespace, settings: CLISettings) -> int:
    events, inputs, divergence = asyncio.run(commands.replay(settings, args.run))
    if args.json:
        _json({"run_id": args.run, "events": events, "inputs": inputs, "divergence": divergence})
    elif divergence is None:
        out(f"run {args.run}: replayed {inputs} inputs over {events} events: no divergence")
    else:
        out(f"run {args.run}: first divergence at {divergence}")
    return 0 if divergence is None else 1


def cmd_export(args: argparse.Namespace, settings: CLISettings) -> int:
    path, counts = asyncio.run(commands.export(settings, args.run, Path(args.out)))
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    out(f"wrote {path} ({summary})")
    return 0


def cmd_memory_rebuild(args: argparse.Namespace, settings: CLISettings) -> int:
    target = Path(args.out) if args.out else None
    report = asyncio.run(commands.memory_rebuild(settings, args.runs, target))
    if args.json:
        _json(report)
    else:
        verdict = "identical to" if report["identical"] else "DIFFERENT from"
        out(
            f"rebuilt {report['entries']} memory entries of {len(report['run_ids'])} run(s): "
            f"{verdict} the live store"
        )
        for line in report["differences"] + report["output_mismatches"]:
            out(f"  {safe(line, 300, one_line=True)}")
    return 0 if report["identical"] and not report["output_mismatches"] else 1


def cmd_similarity(args: argparse.Namespace, settings: CLISettings) -> int:
    """The cycle-by-cycle cosine similarity matrix, from the vectors in the log."""
    from contreact_events.diversity.similarity import similarity_matrix

    _events, state = asyncio.run(commands.load_state(settings, args.run))
    cycles = [cycle for cycle, _ in state.embeddings]
    matrix = similarity_matrix([vector for _, vector in state.embeddings])
    if args.json:
        _json({"run_id": args.run, "cycles": cycles, "matrix": matrix.round(6).tolist()})
        return 0
    if not cycles:
        out(f"run {args.run} has no embedded reflections")
        return 0
    out("cycle " + "".join(f"{c:>7}" for c in cycles))
    for cycle, row in zip(cycles, matrix, strict=True):
        out(f"{cycle:>5} " + "".join(f"{v:>7.3f}" for v in row))
    return 0


def cmd_corpus(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli import diversity_commands

    if args.action == "clear":
        out(asyncio.run(diversity_commands.corpus_clear(settings, args.run, args.experiment)))
        return 0
    stats = asyncio.run(diversity_commands.corpus_stats(settings, args.run, args.experiment))
    if args.json:
        _json(stats)
    else:
        out(
            f"corpus {stats['scope']}: {stats['total_chunks']} paragraph(s) of "
            f"{stats['total_documents']} accepted answer(s) from {len(stats['runs'])} run(s); "
            f"oldest {stats['oldest_timestamp'] or '-'}"
            + (f"; cleared at {stats['cleared_at']}" if stats["cleared_at"] else "")
        )
    return 0


def cmd_search(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli import diversity_commands

    hits = asyncio.run(diversity_commands.search(settings, args.text, args.k, args.run))
    if args.json:
        _json(hits)
        return 0
    if not hits:
        out("nothing to search: no embedded reflections or paragraphs yet")
    for hit in hits:
        out(
            f"{hit['score']:.3f}  {hit['run_id']} cycle {hit['cycle']} {hit['kind']}: "
            f"{safe(hit['text'], 120, one_line=True)}"
        )
    return 0


def cmd_models(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli import models_commands as models

    needs = models.needed_models(Path(args.file), args.host)
    if not needs:
        out(f"{args.file}: no model to run on Ollama (its backend needs none)")
        return 0
    reports = asyncio.run(models.sync_models(needs, out, pull=args.action == "pull"))
    if models.print_reports(reports, out):
        return 0
    if args.action == "check":
        out(f"pull them with `contreact models pull {args.file}`")
    return 1


def cmd_deadletters(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(commands.dead_letters(settings, args.limit))
    if args.json:
        _json(rows)
        return 0
    if not rows:
        out("no dead letters")
    for row in rows:
        out(f"{row['id']}  {row.get('stream', '')}  {row.get('reason', '')}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="contreact", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, func: Callable[..., int], help_text: str, listing: bool = False
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        if listing:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = add("up", cmd_up, "start a local Redis (unless REDIS_URL is set) and every service")
    p.add_argument("--llm-workers", type=bounded_int(1, 64), default=1, help="LLM workers")
    p.add_argument("--memory-workers", type=bounded_int(1, 64), default=1, help="memory services")
    p.add_argument(
        "--orchestrators",
        type=bounded_int(1, 64),
        default=1,
        help="orchestrator replicas (they share the inbox shards)",
    )
    p.add_argument(
        "--embedders",
        type=bounded_int(1, 64),
        default=1,
        help="embedders (a second one takes over at once when one dies; each loads the model)",
    )
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=120.0,
        help="seconds to wait for every service to answer (default 120)",
    )
    add("down", cmd_down, "stop what `contreact up` started")
    add("status", cmd_status, "show the processes and service heartbeats", listing=True)
    p = add("run", cmd_run, "submit a run from a config file and follow its progress")
    p.add_argument("config", help="YAML config (seed 003 format and extensions)")
    p.add_argument("--run-id", type=run_id, help="override the config's run_id")
    p.add_argument(
        "--detach",
        action="store_true",
        help="submit, wait for the orchestrator to take or refuse the run, and return",
    )
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=60.0,
        help="seconds to wait for the services to answer (default 60)",
    )
    p = add("watch", cmd_watch, "follow a run's progress")
    p.add_argument("run", type=run_id)
    add("runs", cmd_runs, "list runs with their status", listing=True)
    p = add("show", cmd_show, "a run's state, metrics per cycle and reflections", listing=True)
    p.add_argument("run", type=run_id)
    p = add("reply", cmd_reply, "answer the agent's message to the operator")
    p.add_argument("run", type=run_id)
    p.add_argument("text", type=text)
    p = add("cancel", cmd_cancel, "cancel a run")
    p.add_argument("run", type=run_id)
    p.add_argument("--reason", type=text, default="cancelled by the operator")
    p = add(
        "rebuild",
        cmd_rebuild,
        "fold a run's log; compare with the orchestrator's state",
        listing=True,
    )
    p.add_argument("run", type=run_id)
    p = add(
        "replay",
        cmd_replay,
        "re-run decide over a logged run; report the first divergence",
        listing=True,
    )
    p.add_argument("run", type=run_id)
    p.add_argument("--check", action="store_true", help="compare with the log (the default)")
    p = add("export", cmd_export, "write the run as seed-003 JSONL LogRecords")
    p.add_argument("run", type=run_id)
    p.add_argument("--out", default="logs", help="output folder (default: logs)")
    p = add(
        "memory-rebuild",
        cmd_memory_rebuild,
        "rebuild the memory store from the run logs and compare it with the live one",
        listing=True,
    )
    p.add_argument("runs", nargs="*", type=run_id, help="run ids (default: every run)")
    p.add_argument("--out", help="keep the rebuilt store at this new file")
    p = add(
        "similarity",
        cmd_similarity,
        "a run's cycle-by-cycle reflection similarity matrix (from the log)",
        listing=True,
    )
    p.add_argument("run", type=run_id)
    p = add(
        "corpus",
        cmd_corpus,
        "paragraph corpus of a run or an experiment: stats or clear",
        listing=True,
    )
    p.add_argument("action", choices=("stats", "clear"))
    p.add_argument("--run", type=run_id, help="the corpus of one run")
    p.add_argument(
        "--experiment", type=experiment, help="the corpus shared by an experiment's runs"
    )
    p = add(
        "search",
        cmd_search,
        "semantic search over reflections and accepted paragraphs",
        listing=True,
    )
    p.add_argument("text", type=text)
    p.add_argument("--k", type=bounded_int(1, 100), default=5, help="how many results (default 5)")
    p.add_argument("--run", type=run_id, help="only this run")
    p = add(
        "models",
        cmd_models,
        "the Ollama models a run config or an experiment needs: check which are missing, "
        "or pull them",
    )
    p.add_argument("action", choices=("pull", "check"))
    p.add_argument("file", help="a run config or an experiment file (YAML)")
    p.add_argument("--host", help="the Ollama to use instead of the one the file names")
    p = add("deadletters", cmd_deadletters, "messages that could not be processed", listing=True)
    p.add_argument("--limit", type=bounded_int(1, 10_000), default=50, help="newest N (default 50)")
    _experiment_parsers(sub)
    return parser


def _experiment_parsers(sub: Any) -> None:
    """``contreact experiment ACTION``: the commands live in ``experiment.py``."""
    from functools import partial

    group = sub.add_parser(
        "experiment",
        help="models x replicas from one file: run, status, cancel, export",
        description="models x replicas from one file: run, status, cancel, export",
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    def add(name: str, func: Callable[..., int], help_text: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = actions.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=partial(func, out=out))
        return p

    p = add(
        "run",
        experiment_commands.cmd_run,
        "submit every run of an experiment file (again: only what did not complete) and "
        "follow them in a live table",
    )
    p.add_argument("file", help="experiment YAML (see configs/paper-experiment.yaml)")
    p.add_argument("--detach", action="store_true", help="submit and return")
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=60.0,
        help="seconds to wait for the services to answer (default 60)",
    )
    p = add(
        "status", experiment_commands.cmd_status, "the table of an experiment's runs and a summary"
    )
    p.add_argument("name", type=experiment)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add(
        "cancel", experiment_commands.cmd_cancel, "cancel every run of an experiment still going"
    )
    p.add_argument("name", type=experiment)
    p.add_argument("--reason", type=text, default="experiment cancelled by the operator")
    p = add(
        "export",
        experiment_commands.cmd_export,
        "every run as seed-003 JSONL plus experiment.json (what ran, where)",
    )
    p.add_argument("name", type=experiment)
    p.add_argument("--out", default="logs", help="output folder (default: logs; NAME/ inside)")


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = CLISettings()
        code = args.func(args, settings)
    except (CLIError, ContReActEventError, BusError) as exc:
        print(f"contreact: error: {safe(str(exc), 2000, one_line=True)}", file=sys.stderr)
        code = 2
    except RedisError as exc:  # Redis went away in the middle of a command
        print(
            f"contreact: error: Redis failed: {safe(str(exc), 300, one_line=True)}", file=sys.stderr
        )
        code = 2
    except OSError as exc:  # a folder that cannot be written, a file that cannot be read
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"contreact: error: {exc.strerror or exc}{where}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # `contreact ... | head`: the reader left, nothing to report
        sys.stderr.close()
        code = 0
    sys.exit(code)
