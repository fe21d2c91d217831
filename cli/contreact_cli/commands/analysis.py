"""``contreact analyze|report``: finished runs as dataframes, and an experiment as one
self-contained HTML report (``contreact_analysis``, imported when one of these runs:
pandas and matplotlib are not loaded for the other commands)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from pathlib import Path
from typing import Any

from contreact_bus.queries import read_queries
from contreact_cli.args import add_command, experiment, run_id
from contreact_cli.connection import optional_redis
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json, warn
from contreact_cli.runs.export_file import (
    check_out_file,
    check_out_folder,
    out_errors,
    write_out_file,
)
from contreact_cli.runs.records import SKIPPED_EXIT, skipped_line
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog.query import RunQueried
from contreact_events.config.run_places import FORK_VIEWS, ForkView

REPORT_MARK = '<meta name="generator" content="contreact report">'
"""In the head of every report (its template): a file with it may be written over."""


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "analyze",
        cmd_analyze,
        "runs as dataframes: one table per level (runs, cycles, tool calls, messages, "
        "events, operator exchanges, memory changes, and an experiment's assessments) "
        "written as parquet or CSV",
        listing=True,
    )
    p.add_argument("runs", nargs="*", type=run_id, metavar="RUN", help="the runs to analyse")
    p.add_argument("--experiment", type=experiment, help="every run of this experiment")
    p.add_argument("--out", type=Path, required=True, help="folder for the tables")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument(
        "--inherited",
        action="store_true",
        help="a fork's rows and figures with the cycles it copied from its parent too "
        "(default: its own cycles, K+1 on)",
    )
    p = add_command(
        sub,
        "conditions",
        cmd_conditions,
        "an experiment's self-reports by condition: per model and condition the mean "
        "score with its interval over runs; per model each condition against the baseline "
        "(a permutation test over runs, a mixed model with a random intercept per run)",
        listing=True,
    )
    p.add_argument("experiment", type=experiment)
    p.add_argument(
        "--baseline",
        help="the condition the others are compared with (default: the first "
        "in alphabetical order)",
    )
    p = add_command(
        sub,
        "report",
        cmd_report,
        "an experiment as one self-contained HTML file (Table 1 with intervals, Table 2 "
        "once assessed, charts, every run's reflections, how to reproduce it)",
    )
    p.add_argument("experiment", type=experiment)
    p.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    p.add_argument(
        "--forks",
        choices=FORK_VIEWS,
        default="none",
        help="the experiment's forks in Table 1 and 2: none (the default), as-rows (each "
        "a group 'A -> B at K' of its own cycles), only",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing file that is not a report (never the platform's own)",
    )


async def _frames(
    settings: CLISettings,
    runs: list[str],
    name: str | None,
    skipped: dict[str, str],
    *,
    forks: ForkView = "none",
    inherited: bool = False,
) -> tuple[Any, Any]:
    """The runs' tables, and the experiment's assessment matrix when Redis holds the
    experiment's record and its runs were assessed (else None). A replica of the
    experiment whose log cannot be read is left out, named in ``skipped``."""
    from contreact_analysis.exceptions import AnalysisError
    from contreact_analysis.frames import collect_frames

    redis = await optional_redis(settings)
    try:
        frames = await collect_frames(
            redis,
            settings.archive_dir,
            run_ids=runs,
            experiment=name,
            inherited=inherited,
            skipped=skipped,
        )
        matrix = None
        if redis is not None and name:
            from contreact_analysis.assessments.experiment import experiment_matrix

            try:
                matrix = await experiment_matrix(redis, settings.archive_dir, name, forks=forks)
            except AnalysisError:
                matrix = None  # no record of the experiment in Redis: no Table 2
        return frames, matrix
    finally:
        if redis is not None:
            await redis.aclose()


async def _ratings(settings: CLISettings, experiment: str) -> Any:
    from contreact_analysis.frames.ratings import experiment_ratings

    redis = await optional_redis(settings)
    if redis is None:
        return None
    try:
        return await experiment_ratings(redis, settings.archive_dir, experiment)
    finally:
        await redis.aclose()


def cmd_analyze(args: argparse.Namespace, settings: CLISettings) -> int:
    """Fold each run's log (Redis, or its archive) into the tables and write them. A
    wrong ``--out`` is refused before the analysis libraries load (2-3 CPU-s)."""
    if args.runs and args.experiment:
        raise CLIError("name runs (contreact analyze RUN ...) or --experiment NAME, not both")
    if not args.runs and not args.experiment:
        raise CLIError("say what to analyse: runs (contreact analyze RUN ...) or --experiment NAME")
    check_out_folder(args.out, settings.data_dir)
    from contreact_analysis.frames import write_frames

    skipped: dict[str, str] = {}
    frames, _matrix = asyncio.run(
        _frames(settings, args.runs, args.experiment, skipped, inherited=args.inherited)
    )
    for run, reason in sorted(skipped.items()):
        warn(skipped_line(run, reason))
    with out_errors(args.out, "the tables"):
        written = write_frames(frames, args.out, args.format)
    sizes = {path.stem: len(frames.tables()[path.stem]) for path in written}
    ratings = asyncio.run(_ratings(settings, args.experiment)) if args.experiment else None
    if ratings is not None:  # once the experiment's runs were assessed
        path = args.out / f"assessments.{args.format}"
        with out_errors(args.out, "the tables"):
            if args.format == "parquet":
                ratings.to_parquet(path, index=False)
            else:
                ratings.to_csv(path, index=False, na_rep="\\N")
        written.append(path)
        sizes[path.stem] = len(ratings)
    if args.json:
        print_json({"files": [str(p) for p in written], "rows": sizes, "skipped": skipped})
        return SKIPPED_EXIT if skipped else 0
    for path in written:
        out(f"{path}  {sizes[path.stem]} rows")
    return SKIPPED_EXIT if skipped else 0


async def _queries(settings: CLISettings, run_ids: list[str]) -> dict[str, list[RunQueried]]:
    """The questions asked of the report's runs (``contreact query``), by run id (the
    archives alone when Redis does not answer)."""
    redis = await optional_redis(settings)
    try:
        return await read_queries(redis, settings.archive_dir, run_ids)
    finally:
        if redis is not None:
            await redis.aclose()


def cmd_report(args: argparse.Namespace, settings: CLISettings) -> int:
    """Write the experiment's report: one HTML file that needs no server and no network.
    An existing file is written over only when it is a report (or with ``--force``),
    the platform's own files never (refused before the analysis libraries load)."""
    check_out_file(
        args.out, settings.data_dir, mark=REPORT_MARK, command="report", force=args.force
    )
    from contreact_analysis.report import build_report, render_report

    skipped: dict[str, str] = {}
    frames, matrix = asyncio.run(_frames(settings, [], args.experiment, skipped, forks=args.forks))
    for run, reason in sorted(skipped.items()):
        warn(skipped_line(run, reason))
    words = ["contreact", "report", args.experiment, "--out", str(args.out)]
    command = shlex.join([*words, *(["--forks", args.forks] if args.forks != "none" else [])])
    pei = matrix.pei if matrix is not None and matrix.pei and matrix.pei.ratings else None
    report = build_report(
        frames,
        title=f"Experiment {args.experiment}",
        command=command,
        table2=pei,
        forks=args.forks,
        queries=asyncio.run(_queries(settings, list(frames.runs["run_id"]))),
    )
    write_out_file(args.out, render_report(report), "the report")
    left_out = f"; {len(skipped)} left out, unreadable" if skipped else ""
    out(f"{args.out}  ({len(frames.runs)} runs{left_out})")
    return SKIPPED_EXIT if skipped else 0


def cmd_conditions(args: argparse.Namespace, settings: CLISettings) -> int:
    """The self-report statistics of an experiment's runs (``stats.conditions``)."""
    from contreact_analysis.stats.conditions import condition_summary

    skipped: dict[str, str] = {}
    frames, _matrix = asyncio.run(_frames(settings, [], args.experiment, skipped))
    for run, reason in sorted(skipped.items()):
        warn(skipped_line(run, reason))
    reports = frames.self_reports
    if not len(reports):
        raise CLIError(
            f"experiment {args.experiment}: no self-reports (its runs' configs have no "
            "tools.self_report)"
        )
    known = set(reports["condition"].dropna())
    if args.baseline is not None and args.baseline not in known:
        raise CLIError(
            f"--baseline {args.baseline!r}: no such condition in {args.experiment} "
            f"(conditions: {', '.join(sorted(known)) or 'none'})"
        )
    summary = condition_summary(reports, baseline=args.baseline)
    if args.json:
        print_json({"experiment": args.experiment, **summary, "skipped": skipped})
        return SKIPPED_EXIT if skipped else 0
    out(f"{summary['valid_reports']} of {summary['reports']} self-reports accepted")
    out(f"{'MODEL':<18}  {'CONDITION':<12}  {'RUNS':>4}  {'MEAN':>5}  95% INTERVAL")
    for row in summary["means"]:
        interval = (
            f"{row['low']:.2f} .. {row['high']:.2f}"
            if row["low"] is not None
            else f"none ({row['no_interval']})"
        )
        out(
            f"{safe(row['model'], 18, one_line=True):<18}  "
            f"{safe(row['condition'], 12, one_line=True):<12}  {row['runs']:>4}  "
            f"{row['mean']:>5.2f}  {interval}"
        )
    for c in summary["contrasts"]:
        out(
            f"{safe(c['model'], 40, one_line=True)}: {c['condition']} - {c['baseline']} = "
            f"{c['difference']:+.2f} (permutation p = {c['permutation_p']:.4f}); mixed model "
            f"{c['mixed_estimate']:+.2f} [{c['mixed_low']:.2f}, {c['mixed_high']:.2f}], "
            f"p = {c['mixed_p']:.4f}"
        )
    return SKIPPED_EXIT if skipped else 0
