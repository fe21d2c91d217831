"""``contreact assess``: evaluator models rate finished runs, as rq jobs.

- ``assess RUN... --evaluator MODEL... [--instrument pei|patterns] [--repeats N]
  [--force] [--temperature T] [--backend B] [--host URL]``
- ``assess --experiment EXP``: every model of the experiment rates every replica.
- ``assess status [RUN...|--experiment EXP] [--json]``
- ``assess export RUN...|--experiment EXP --out DIR``
- ``assess verify RUN...``: rebuild every rated input from the log, compare hashes.
- ``assess matrix EXP [--json]``: the cross-model matrix and its statistics
  (``commands/assess_matrix.py``).

``status``, ``export`` and ``verify`` are action words: a run with such an id is named
with ``--run``. Enqueueing a rating that is done or queued adds nothing; ``--force``
adds new repeats.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import redis

from contreact_assessor.queueing import JobPolicy, Placed, Wanted, enqueue, queue
from contreact_bus.assessments import read_assessments
from contreact_cli.args import add_command, bounded_int, run_id
from contreact_cli.args import experiment as experiment_name
from contreact_cli.assessing import reports as assess_reports
from contreact_cli.assessing.targets import (
    RatedRun,
    evaluators_for,
    experiment_runs,
    named_runs,
    require_ended,
)
from contreact_cli.commands import assess_matrix
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.export_file import check_out_folder, out_errors
from contreact_cli.output import out, print_json
from contreact_cli.settings import CLISettings
from contreact_events.instruments import INSTRUMENT_NAMES

ACTIONS = ("status", "export", "verify")
BACKENDS = ("ollama", "openai", "embedded", "scripted")


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "assess",
        cmd_assess,
        "evaluator models rate finished runs (PEI, behavioural patterns) as rq jobs; "
        "`assess status|export|verify` look at the ratings",
        epilog=__doc__,
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("words", nargs="*", metavar="RUN", help="runs to rate, or an action and runs")
    p.add_argument(
        "--run",
        dest="more_runs",
        action="append",
        type=run_id,
        default=[],
        metavar="RUN",
        help="a run whose id is an action word (status, export, verify)",
    )
    p.add_argument("--experiment", type=experiment_name, help="every replica of an experiment")
    p.add_argument(
        "--evaluator",
        nargs="+",
        dest="evaluators",
        metavar="MODEL",
        help="who rates (with --experiment, default: every model of the experiment)",
    )
    p.add_argument("--instrument", choices=INSTRUMENT_NAMES, default="pei")
    p.add_argument("--repeats", type=bounded_int(1, 100), default=1, help="ratings per pair")
    p.add_argument("--force", action="store_true", help="new repeats even if rated before")
    p.add_argument(
        "--models-at-once",
        type=bounded_int(1, 64),
        default=2,
        help="evaluator models a host holds at once (OLLAMA_MAX_LOADED_MODELS): the queue "
        "takes that many evaluators' ratings at a time, so each model loads once (default 2)",
    )
    p.add_argument("--temperature", type=float, default=0.1, help="the evaluator's (0.1)")
    p.add_argument(
        "--backend", choices=BACKENDS, default=None, help="for evaluators no rated run ran"
    )
    p.add_argument("--host", default=None, help="the evaluator's host (with --backend)")
    p.add_argument("--out", default=None, help="export: the folder for the files")
    p.add_argument("--json", action="store_true", help="machine-readable output")


RATE_ONLY = ("evaluators", "force", "backend", "host")


def cmd_assess(args: argparse.Namespace, settings: CLISettings) -> int:
    words: list[str] = list(args.words)
    if words and words[0] == "matrix":
        return assess_matrix.cmd_matrix([*words[1:], *(["--json"] if args.json else [])], settings)
    action = words[0] if words and words[0] in ACTIONS else "rate"
    if action != "rate":
        words = words[1:]
    try:  # (checked here: an action word and run ids share the positionals)
        args.runs = [run_id(word) for word in words] + args.more_runs
    except argparse.ArgumentTypeError as exc:
        raise CLIError(str(exc)) from None
    if action == "rate":
        if args.out is not None:
            raise CLIError("--out is for `assess export`")
        return _rate(args, settings)
    given = [name for name in RATE_ONLY if getattr(args, name)]
    if given:
        raise CLIError(f"--{given[0].rstrip('s')} is for rating, not for `assess {action}`")
    if not args.runs and not args.experiment and action != "status":
        raise CLIError(f"assess {action}: name the runs, or --experiment EXP")
    if action == "export" and not args.out:
        raise CLIError("assess export: say where (--out DIR)")
    return {"status": _status, "export": _export, "verify": _verify}[action](args, settings)


def _rate(args: argparse.Namespace, settings: CLISettings) -> int:
    run_ids = list(args.runs)
    if not run_ids and not args.experiment:
        raise CLIError("assess: name the runs to rate (RUN...) or --experiment EXP")
    if not args.experiment and not args.evaluators:
        raise CLIError("assess: name the evaluators (--evaluator MODEL...)")
    if not 0 <= args.temperature <= 2:
        raise CLIError(f"--temperature {args.temperature}: give a value from 0 to 2")
    placed = asyncio.run(_enqueue(args, settings, run_ids))
    if args.json:
        print_json([p.__dict__ for p in placed])
        return 0
    for line in assess_reports.placed_lines(placed):
        out(line)
    return 0


async def _enqueue(
    args: argparse.Namespace, settings: CLISettings, run_ids: list[str]
) -> list[Placed]:
    async with redis_client(settings) as client:
        runs: list[RatedRun] = await named_runs(client, settings, run_ids)
        if args.experiment:
            runs += await experiment_runs(client, settings, args.experiment)
        require_ended(runs)
        evaluators = evaluators_for(
            runs,
            args.evaluators,
            backend=args.backend,
            host=args.host,
            temperature=args.temperature,
        )
        wanted = [Wanted(r.run_id, args.instrument, ev) for r in runs for ev in evaluators]
        rq_connection = redis.Redis.from_url(settings.resolved_rq_redis_url())
        try:
            return await enqueue(
                client,
                queue(rq_connection),
                wanted,
                repeats=args.repeats,
                models_at_once=args.models_at_once,
                force=args.force,
                policy=JobPolicy(),
                requested_by="cli",
            )
        finally:
            rq_connection.close()


async def _runs_and_records(
    args: argparse.Namespace, settings: CLISettings
) -> tuple[list[RatedRun], dict[str, list[Any]]]:
    """The runs named (or the experiment's) and every assessment record of each."""
    redis_ = await optional_redis(settings)
    try:
        runs = await named_runs(redis_, settings, args.runs)
        if args.experiment:
            if redis_ is None:
                raise CLIError("an experiment's runs are listed in Redis, which does not answer")
            runs += await experiment_runs(redis_, settings, args.experiment)
        records = await read_assessments(redis_, settings.archive_dir, [r.run_id for r in runs])
        return runs, dict(records)
    finally:
        if redis_ is not None:
            await redis_.aclose()


def _status(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(assess_reports.status_rows(settings, args.runs, args.experiment))
    if args.json:
        print_json(rows)
        return 0
    for line in assess_reports.status_lines(rows):
        out(line)
    return 0


def _export(args: argparse.Namespace, settings: CLISettings) -> int:
    folder = Path(args.out)
    check_out_folder(folder, settings.data_dir)  # (its files are named as the archives)
    runs, records = asyncio.run(_runs_and_records(args, settings))
    with out_errors(folder, "the assessment records"):
        written = assess_reports.export(runs, records, folder)
    out(f"wrote {written} record(s) of {len(runs)} run(s) and pei_results.jsonl to {folder}")
    return 0


def _verify(args: argparse.Namespace, settings: CLISettings) -> int:
    runs, records = asyncio.run(_runs_and_records(args, settings))
    report = assess_reports.verify(runs, records)
    if args.json:
        print_json(report)
    else:
        for line in assess_reports.verify_lines(report):
            out(line)
    return 1 if any(not row["ok"] for row in report) else 0
