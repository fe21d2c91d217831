"""``contreact experiment run|plan|status|cancel|export``: models x replicas in one command
(``plan`` in ``experiment_plan.py``).

``run FILE`` expands the file into runs, decides per replica what resubmitting means
(``contreact_events.config.experiment_resume.resume``: done and running replicas are left alone,
failed or cancelled ones run again under their next id), sends every request in one
pipeline with the experiment's record, then shows the live table and a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import orjson

from contreact_bus.experiments import (
    ReplicaEntry,
    existing_runs,
    queue_entry,
    replica_entries,
    run_statuses,
)
from contreact_bus.streams.inbox import Inbox
from contreact_cli.args import add_command, positive_seconds, text
from contreact_cli.args import experiment as experiment_name
from contreact_cli.commands.experiment_plan import register_plan
from contreact_cli.config_file import load_experiment
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer, out, warn
from contreact_cli.runs.experiment_budget import HeldRuns
from contreact_cli.runs.experiment_forks import ForkSender
from contreact_cli.runs.export_file import write_export
from contreact_cli.runs.records import SKIPPED_EXIT, events_or_skip, skipped_line
from contreact_cli.settings import CLISettings
from contreact_cli.stack.service_waits import required_services, wait_for_services
from contreact_cli.text import safe
from contreact_cli.views.experiment import ExperimentProgress, LiveTable, summary, table
from contreact_events.config.experiment_resume import ACTIVE_STATUSES, Submission, resume
from contreact_events.history.experiment_forks import planned_forks
from contreact_events.wire.answers import run_cancelled, run_requested

REFRESH_S = 0.5


async def run_experiment(
    settings: CLISettings, path: Path, out: Printer, *, follow: bool = True, wait_s: float = 60.0
) -> int:
    experiment, planned = load_experiment(path)
    forks = ForkSender(experiment.experiment, planned_forks(experiment, planned, source=str(path)))
    name = experiment.experiment
    async with redis_client(settings) as redis:
        needed = {service for run in planned for service in required_services(run.config)}
        await wait_for_services(redis, settings, wait_s, tuple(sorted(needed)))
        entries = await replica_entries(redis, name)
        statuses = await run_statuses(
            redis, settings.archive_dir, [e.run_id for e in entries.values()]
        )
        plan = resume(
            planned, {k: e.recorded for k, e in entries.items()}, statuses, source=str(path)
        )
        fresh = [s.config.run_id for s in plan if s.action in ("submit", "retry")]
        taken = await existing_runs(redis, settings.archive_dir, fresh)
        if taken:
            raise CLIError(
                f"{path}: run id(s) {', '.join(taken)} exist already outside this experiment's "
                "record: give the experiment another name"
            )
        sending, held = HeldRuns.split(experiment, plan)
        if experiment.experiment_budget is not None and entries:
            before = ExperimentProgress.of(list(entries.values()), settings.archive_dir)
            while await before.poll(redis):
                pass
            reached = held.reached(before.rows(), time.time())
            if reached is not None:
                held.held, sending = [*sending, *held.held], []
                held.release(before.rows(), time.time())
        await _send(redis, name, sending)
        for line in _plan_lines(name, plan):
            out(line)
        if held.held:
            out(
                f"{len(held.held)} run(s) wait their turn (parallel: {experiment.parallel}, "
                "budget permitting)"
            )
        if held.stopped:
            warn(held.stopped)
        if forks.forks:
            sent = await forks.send_ready(redis)
            out(f"{len(forks.forks)} fork(s) at cycle {forks.forks[0].at_cycle}, {len(sent)} sent")
        if not follow:
            if held.held:
                out("runs held back are started only while `experiment run` follows them")
            if forks.forks:
                out("forks are sent once their parents end their cycle: run the file again")
            out(f"follow it with `contreact experiment status {name}`")
            return 0
        return await _follow(redis, settings, name, out, forks, held)


async def _send(redis: Any, name: str, plan: list[Submission]) -> None:
    """Every request and the record of every replica, in one round trip."""
    inbox = await Inbox.open(redis)
    async with redis.pipeline(transaction=False) as pipe:
        for submission in plan:
            if not submission.sends:
                continue
            queue_entry(pipe, name, ReplicaEntry.of(submission))
            inbox.queue(pipe, run_requested(submission.config, f"experiment {name}"))
        await pipe.execute()


def _plan_lines(name: str, plan: list[Submission]) -> list[str]:
    counts: dict[str, int] = {}
    for submission in plan:
        counts[submission.action] = counts.get(submission.action, 0) + 1
    wording = {
        "submit": "submitted",
        "retry": "run again (failed or cancelled before)",
        "resend": "sent again (not taken yet)",
        "running": "still running",
        "done": "done already",
    }
    parts = [f"{n} {wording[action]}" for action, n in counts.items()]
    lines = [f"experiment {name}: {len(plan)} run(s): {', '.join(parts)}"]
    lines += [
        f"  {s.config.run_id}: attempt {s.attempt} (the last one {s.status or 'left no trace'})"
        for s in plan
        if s.action == "retry"
    ]
    return lines


async def _follow(
    redis: Any,
    settings: CLISettings,
    name: str,
    out: Printer,
    forks: ForkSender,
    held: HeldRuns,
) -> int:
    """The live table until every run has ended (sending the forks as their parents get
    there), then the summary. Ctrl-C stops following; the runs go on."""

    async def everything() -> ExperimentProgress:
        entries = await replica_entries(redis, name)
        return ExperimentProgress.of(list(entries.values()), settings.archive_dir)

    progress = await everything()
    live = LiveTable(out)
    stop_said = held.stopped is not None
    try:
        while True:
            released = held.release(progress.rows(), time.time())
            if released:
                await _send(redis, name, released)
                progress = await everything()
            if held.stopped and not stop_said:
                warn(held.stopped)
                stop_said = True
            reached = held.reached(progress.rows(), time.time()) if forks.forks else None
            unsent = [
                f.replica
                for f in forks.forks
                if f.replica not in forks.given_up and f.replica not in forks.sent
            ]
            if reached is not None and unsent:
                forks.given_up.update(unsent)
                warn(f"experiment {name}: its budget is reached ({reached}): forks not started")
            if forks.forks:
                sent = await forks.send_ready(redis)
                refused = await forks.refused(redis)
                for run_id, why in refused.items():
                    warn(f"fork {run_id} refused: {safe(why, 500, one_line=True)}")
                if sent or refused:
                    progress = await everything()
            if await progress.poll(redis):
                live.show(progress.rows())
            if held.held and progress.done:
                continue  # the next round starts the held runs (or says why not)
            if progress.done and not (forks.forks and await forks.send_ready(redis)):
                break  # every run ended, and no fork is due any more
            if progress.done:
                progress = await everything()
            await asyncio.sleep(REFRESH_S)
    except (KeyboardInterrupt, asyncio.CancelledError):
        out(
            f"stopped following; experiment {name} goes on "
            f"(`contreact experiment status {name}`, `contreact experiment cancel {name}`)"
        )
        return 130
    rows = progress.rows()
    out("")
    for line in summary(rows):
        out(line)
    if held.stopped:
        out(held.stopped)
    out(
        f"next: `contreact experiment export {name}`; resubmitting the file runs again only "
        "what failed or was cancelled"
    )
    if held.stopped:
        return 1
    return 0 if all(row["status"] == "completed" for row in rows) else 1


async def _progress(settings: CLISettings, name: str) -> ExperimentProgress:
    async with redis_client(settings) as redis:
        entries = await replica_entries(redis, name)
        if not entries:
            raise CLIError(
                f"no experiment '{name}' in Redis: `contreact experiment run FILE` starts one"
            )
        progress = ExperimentProgress.of(list(entries.values()), settings.archive_dir)
        while await progress.poll(redis):
            pass
    return progress


async def experiment_status(settings: CLISettings, name: str) -> list[dict[str, Any]]:
    return (await _progress(settings, name)).rows()


async def cancel_experiment(
    settings: CLISettings, name: str, reason: str, out: Printer, wait_s: float = 15.0
) -> int:
    rows = await experiment_status(settings, name)
    going = [row["run_id"] for row in rows if row["status"] in (*ACTIVE_STATUSES, "submitted")]
    if not going:
        out(f"experiment {name}: no run is going")
        return 0
    async with redis_client(settings) as redis:
        inbox = await Inbox.open(redis)
        async with redis.pipeline(transaction=False) as pipe:
            for run_id in going:
                inbox.queue(pipe, run_cancelled(run_id, reason))
            await pipe.execute()
        deadline = time.monotonic() + wait_s
        statuses: dict[str, str | None] = {}
        while time.monotonic() < deadline:
            statuses = await run_statuses(redis, settings.archive_dir, going)
            if all(status not in ACTIVE_STATUSES for status in statuses.values()):
                break
            await asyncio.sleep(0.2)
    left = [run_id for run_id, status in statuses.items() if status in ACTIVE_STATUSES]
    out(f"experiment {name}: cancelled {len(going) - len(left)} run(s)")
    if left:
        out(f"not cancelled yet (is the orchestrator running?): {', '.join(left)}")
    return 1 if left else 0


async def export_experiment(
    settings: CLISettings, name: str, out_dir: Path, skipped: dict[str, str] | None = None
) -> tuple[Path, int]:
    """Each replica's current run as seed-003 JSONL, and ``experiment.json``: every
    replica, its attempts, status, and the backend and model that actually ran. A
    replica whose log cannot be read gets no file; it is put in ``skipped`` with the
    reason, and the others are exported."""
    skipped = {} if skipped is None else skipped
    progress = await _progress(settings, name)
    folder = out_dir / name
    redis = await optional_redis(settings)
    manifest: dict[str, Any] = {"experiment": name, "replicas": []}
    try:
        for view, row in zip(progress.runs, progress.rows(), strict=True):
            entry = view.entry
            record = {
                **row,
                "attempts": [
                    entry.first_run_id if n == 1 else f"{entry.first_run_id}.{n}"
                    for n in range(1, entry.attempt + 1)
                ],
                "file": None,
            }
            events = None
            if view.state is not None and view.unreadable is None:
                events = await events_or_skip(redis, settings, entry.run_id, skipped)
            elif view.unreadable is not None:
                skipped[entry.run_id] = view.unreadable
            if events is not None:
                path, _counts = await asyncio.to_thread(
                    write_export, events, folder / f"{entry.run_id}.jsonl"
                )
                record["file"] = path.name
            manifest["replicas"].append(record)
    finally:
        if redis is not None:
            await redis.aclose()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiment.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return folder, sum(1 for r in manifest["replicas"] if r["file"])


def register(sub: Any) -> None:
    help_text = "models x replicas from one file: run, status, cancel, export"
    group = sub.add_parser("experiment", help=help_text, description=help_text)
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = add_command(
        actions,
        "run",
        cmd_run,
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
    register_plan(actions)
    p = add_command(
        actions, "status", cmd_status, "the table of an experiment's runs and a summary"
    )
    p.add_argument("name", type=experiment_name)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add_command(actions, "cancel", cmd_cancel, "cancel every run of an experiment still going")
    p.add_argument("name", type=experiment_name)
    p.add_argument("--reason", type=text, default="experiment cancelled by the operator")
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=15.0,
        help="seconds to wait (15)",
    )
    p = add_command(
        actions,
        "export",
        cmd_export,
        "every run as seed-003 JSONL plus experiment.json (what ran, where)",
        epilog=(
            "A replica whose log cannot be read is named on stderr and gets no file; the "
            f"others are exported. Exit 0 when every run was written, {SKIPPED_EXIT} when "
            "some were skipped, 2 on an error."
        ),
    )
    p.add_argument("name", type=experiment_name)
    p.add_argument("--out", default="logs", help="output folder (default: logs; NAME/ inside)")
    p.add_argument(
        "--format",
        choices=("seed003", "inspect"),
        default="seed003",
        help="seed003: JSONL per run and experiment.json (default); inspect: one .eval per "
        "model, runs as samples, replicas as epochs (needs contreact-cli[inspect])",
    )


def cmd_run(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(
        run_experiment(settings, Path(args.file), out, follow=not args.detach, wait_s=args.wait)
    )


def cmd_status(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(experiment_status(settings, args.name))
    if args.json:
        out(json.dumps(rows, indent=2))
        return 0
    for line in [*table(rows), "", *summary(rows)]:
        out(line)
    return 0


def cmd_cancel(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(cancel_experiment(settings, args.name, args.reason, out, args.wait))


def cmd_export(args: argparse.Namespace, settings: CLISettings) -> int:
    if args.format == "inspect":
        # pandas and scipy (the agreement figures): imported on use, not by every command
        from contreact_cli.runs.inspect_export import export_experiment_inspect

        paths = asyncio.run(export_experiment_inspect(settings, args.name, Path(args.out)))
        for written in paths:
            out(f"wrote {written}")
        out(f"open them with `inspect view --log-dir {Path(args.out) / args.name}`")
        return 0
    skipped: dict[str, str] = {}
    folder, files = asyncio.run(export_experiment(settings, args.name, Path(args.out), skipped))
    for run_id, reason in sorted(skipped.items()):
        warn(skipped_line(run_id, reason))
    out(f"wrote {files} run(s) and experiment.json to {folder}")
    return SKIPPED_EXIT if skipped else 0
