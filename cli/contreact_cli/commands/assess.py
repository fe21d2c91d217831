"""``contreact assess``: evaluator models rate finished runs, as rq jobs.

- ``assess RUN... --evaluator MODEL... [--instrument pei|patterns] [--repeats N]
  [--force] [--temperature T] [--seed N] [--follow-up on|off] [--backend B]
  [--host URL]``
- ``assess --experiment EXP [--forks none|as-rows|only]``: every model of the
  experiment rates every replica (and its forks, when asked; a fork that has not ended
  is left out and named).
- ``assess status [RUN...|--experiment EXP] [--json]``
- ``assess export RUN...|--experiment EXP --out DIR``
- ``assess verify RUN...``: rebuild every rated input from the log, compare hashes.
- ``assess read RECORD --level N|--label KEY --by NAME [--note TEXT]``: a person's
  reading of a rating's answer (``commands/assess_read.py``).
- ``assess matrix EXP [--forks none|as-rows|only] [--json]``: the cross-model matrix
  and its statistics (``commands/assess_matrix.py``).

``status``, ``export``, ``verify`` and ``read`` are action words: a run with such an
id is named with ``--run``. Enqueueing a rating that is done or queued adds nothing;
``--force`` adds new repeats; a rating that failed for a transient reason is asked
again. When the parser finds no level in an answer (or several), the evaluator is
asked once more to state it as JSON (``--follow-up off``: the paper's single turn).
Evaluators answer at the instrument's temperature (0.1), with no output cap, and a
seed only when ``--seed`` is given (repeat r: seed + r - 1).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from contreact_bus.assessments import read_assessments
from contreact_bus.assessments.queueing import JobPolicy, Placed, Wanted, enqueue, queue
from contreact_cli.args import add_command, bounded_int, run_id
from contreact_cli.args import experiment as experiment_name
from contreact_cli.args import text as text_arg
from contreact_cli.assessing import reports as assess_reports
from contreact_cli.assessing.targets import (
    RatedRun,
    evaluators_for,
    experiment_runs,
    named_runs,
    require_ended,
    unique_runs,
)
from contreact_cli.commands import assess_matrix, assess_read
from contreact_cli.connection import optional_redis, redis_client, rq_connection
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json, warn
from contreact_cli.runs.export_file import check_out_folder, out_errors
from contreact_cli.settings import CLISettings
from contreact_events.config.hosts import host_problem
from contreact_events.config.run_places import FORK_VIEWS
from contreact_events.instruments import INSTRUMENT_NAMES, load_instrument

ACTIONS = ("status", "export", "verify", "read")
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
        "--forks",
        choices=FORK_VIEWS,
        default=None,
        help="an experiment's forks: none (the default: its replicas), as-rows (its forks "
        "too, each a row 'A -> B at K' of Table 2), only",
    )
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
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="the evaluator's (default: the instrument's, the paper's 0.1)",
    )
    p.add_argument(
        "--seed",
        type=bounded_int(0, 2**31 - 1),
        default=None,
        help="a seed for the evaluators' calls (repeat r uses seed + r - 1; default: none)",
    )
    p.add_argument(
        "--follow-up",
        choices=("on", "off"),
        default="on",
        help="when the parser finds no level, ask the evaluator once more to state it as "
        "JSON (on, the default); off: the paper's single turn",
    )
    p.add_argument(
        "--backend", choices=BACKENDS, default=None, help="for evaluators no rated run ran"
    )
    p.add_argument("--host", default=None, help="the evaluator's host (with --backend)")
    p.add_argument("--out", default=None, help="export: the folder for the files")
    p.add_argument("--level", type=int, default=None, help="read: the level read (PEI)")
    p.add_argument("--label", default=None, help="read: the label read (patterns)")
    p.add_argument("--by", type=text_arg, default=None, help="read: who reads it")
    p.add_argument("--note", type=text_arg, default=None, help="read: why")
    p.add_argument("--json", action="store_true", help="machine-readable output")


RATE_ONLY = ("evaluators", "force", "backend", "host", "seed")
READ_ONLY = ("level", "label", "by", "note")


def cmd_assess(args: argparse.Namespace, settings: CLISettings) -> int:
    words: list[str] = list(args.words)
    if words and words[0] == "matrix":
        flags = ["--json"] if args.json else []
        flags += ["--forks", args.forks] if args.forks else []
        return assess_matrix.cmd_matrix([*words[1:], *flags], settings)
    action = words[0] if words and words[0] in ACTIONS else "rate"
    if action != "rate":
        words = words[1:]
    if action != "read":
        given = [name for name in READ_ONLY if getattr(args, name) is not None]
        if given:
            raise CLIError(f"--{given[0]} is for `assess read RECORD`")
    else:
        return assess_read.cmd_read(args, words, settings)
    try:  # (checked here: an action word and run ids share the positionals)
        args.runs = [run_id(word) for word in words] + args.more_runs
    except argparse.ArgumentTypeError as exc:
        raise CLIError(str(exc)) from None
    if action == "rate":
        if args.out is not None:
            raise CLIError("--out is for `assess export`")
        return _rate(args, settings)
    given = [name for name in RATE_ONLY if getattr(args, name) not in (None, False)]
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
    if args.temperature is None:
        args.temperature = load_instrument(args.instrument).evaluator_temperature
    if not 0 <= args.temperature <= 2:  # (nan and inf fail this too)
        raise CLIError(f"--temperature {args.temperature}: give a value from 0 to 2")
    if args.host is not None:
        problem = host_problem(args.host)
        if problem is not None:
            raise CLIError(f"--host {problem}")
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
        rating = list(runs)
        if args.experiment:
            chosen = await experiment_runs(
                client, settings, args.experiment, forks=args.forks or "none", ended_forks=True
            )
            runs += chosen.rated
            rating += [*chosen.replicas, *chosen.rated]
            for line in chosen.left_out:
                warn(line)
        runs = unique_runs(runs)
        require_ended(runs)
        evaluators = evaluators_for(
            rating,
            args.evaluators,
            backend=args.backend,
            host=args.host,
            temperature=args.temperature,
            seed=args.seed,
        )
        wanted = [Wanted(r.run_id, args.instrument, ev) for r in runs for ev in evaluators]
        rq_client = rq_connection(settings)
        try:
            return await enqueue(
                client,
                queue(rq_client),
                wanted,
                repeats=args.repeats,
                models_at_once=args.models_at_once,
                force=args.force,
                policy=JobPolicy(),
                requested_by="cli",
                follow_up=args.follow_up == "on",
            )
        finally:
            rq_client.close()


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
            chosen = await experiment_runs(
                redis_, settings, args.experiment, forks=args.forks or "as-rows"
            )
            runs += chosen.rated
        runs = unique_runs(runs)
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
