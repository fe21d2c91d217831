"""``contreact rebuild|replay|export|memory-rebuild|deadletters``: a run's log checked
against what the services hold or against a changed setting (``replay --what-if``),
written out, or the messages nothing could process."""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.replies import entries, text_map
from contreact_bus.streams.inbox import Inbox
from contreact_cli.args import add_command, bounded_int, run_id
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json, warn
from contreact_cli.runs.export_file import check_out_dir, write_export
from contreact_cli.runs.records import (
    SKIPPED_EXIT,
    events_or_skip,
    load_run_events,
    load_state,
    runs,
    skipped_line,
)
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_cli.views.what_if import WHAT_IF_EXITS, print_what_if
from contreact_events.config.overrides import parse_assignments
from contreact_events.core.state import AgentState
from contreact_events.history.replay import replay_check
from contreact_events.history.what_if import what_if
from contreact_events.history.what_if_keys import check_keys
from contreact_events.names import DEAD_LETTER_STREAM, run_digest_key, run_meta_key
from contreact_events.wire.tasks import DIGEST_REQUEST, InboxMessage

"""``memory-rebuild`` over every run: the runs read compare equal, but some run's log
could not be read (each named on stderr)."""

MEMORY_REBUILD_EXITS = (
    "Without run ids, a run whose log cannot be read (a quarantined run) is skipped and "
    "named on stderr, and the others are rebuilt. Exit codes: 0 identical, 1 different, "
    f"{SKIPPED_EXIT} identical for the runs read but some run was skipped, 2 an error."
)


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "rebuild",
        cmd_rebuild,
        "fold a run's log; compare with the orchestrator's state",
        listing=True,
    )
    p.add_argument("run", type=run_id)
    p = add_command(
        sub,
        "replay",
        cmd_replay,
        "re-run decide over a logged run; report the first divergence from the log, or "
        "(--what-if) where a changed setting would have changed the run",
        listing=True,
        epilog=WHAT_IF_EXITS,
    )
    p.add_argument("run", type=run_id)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the log (the default)")
    mode.add_argument(
        "--what-if",
        dest="what_if",
        action="append",
        metavar="KEY=VALUE",
        help="re-drive the recorded inputs with this setting changed (repeatable; the "
        "same key=value as fork --set), calling no model",
    )
    p = add_command(
        sub,
        "export",
        cmd_export,
        "write runs as seed-003 JSONL LogRecords, or as Inspect logs (--format inspect)",
    )
    p.add_argument("runs", nargs="+", type=run_id, metavar="run")
    p.add_argument("--out", default="logs", help="output folder (default: logs)")
    p.add_argument(
        "--format",
        choices=("seed003", "inspect"),
        default="seed003",
        help="seed003: one JSONL file per run (default); inspect: one .eval per "
        "(experiment, model), read by `inspect view` (needs contreact-cli[inspect])",
    )
    p = add_command(
        sub,
        "memory-rebuild",
        cmd_memory_rebuild,
        "rebuild the memory store from the run logs and compare it with the live one",
        listing=True,
        epilog=MEMORY_REBUILD_EXITS,
    )
    p.add_argument("runs", nargs="*", type=run_id, help="run ids (default: every run)")
    p.add_argument("--out", help="keep the rebuilt store at this new file")
    p = add_command(
        sub, "deadletters", cmd_deadletters, "messages that could not be processed", listing=True
    )
    p.add_argument("--limit", type=bounded_int(1, 10_000), default=50, help="newest N (default 50)")


def cmd_rebuild(args: argparse.Namespace, settings: CLISettings) -> int:
    report = asyncio.run(rebuild(settings, args.run))
    if args.json:
        print_json({**report.__dict__, "equal": report.equal})
    else:
        out(
            f"run {report.run_id}: {report.events} events folded, status {report.status}, "
            f"cycle {report.cycles}"
        )
        out(f"  state digest  {report.digest}")
        verdict = {True: "EQUAL", False: "DIFFERENT", None: "not compared"}[report.equal]
        comparison = safe(report.comparison, one_line=True)
        out(f"  orchestrator  {report.orchestrator_digest or '-'}  {verdict}: {comparison}")
    return 1 if report.equal is False else 0


def cmd_replay(args: argparse.Namespace, settings: CLISettings) -> int:
    if args.what_if:
        return cmd_what_if(args, settings)
    events, inputs, divergence = asyncio.run(replay(settings, args.run))
    if args.json:
        print_json(
            {"run_id": args.run, "events": events, "inputs": inputs, "divergence": divergence}
        )
    elif divergence is None:
        out(f"run {args.run}: replayed {inputs} inputs over {events} events: no divergence")
    else:
        out(f"run {args.run}: first divergence at {safe(divergence, one_line=True)}")
    return 0 if divergence is None else 1


def cmd_what_if(args: argparse.Namespace, settings: CLISettings) -> int:
    assignments = parse_assignments(args.what_if, option="--what-if")
    check_keys(assignments)  # a refused key is named before any run is read
    events = asyncio.run(load_run_events(settings, args.run))
    report = what_if(events, assignments)
    if args.json:
        print_json(report.as_json())
    else:
        print_what_if(report, out)
    return 1 if report.changes_anything else 0


def cmd_export(args: argparse.Namespace, settings: CLISettings) -> int:
    if args.format == "inspect":
        from contreact_cli.runs.inspect_export import export_inspect  # pandas, scipy: on use

        paths = asyncio.run(export_inspect(settings, args.runs, Path(args.out)))
        for written in paths:
            out(f"wrote {written}")
        out(f"open them with `inspect view --log-dir {args.out}`")
        return 0
    for run in args.runs:
        path, counts = asyncio.run(export(settings, run, Path(args.out)))
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        out(f"wrote {path} ({summary})")
    return 0


def cmd_memory_rebuild(args: argparse.Namespace, settings: CLISettings) -> int:
    target = Path(args.out) if args.out else None
    report = asyncio.run(memory_rebuild(settings, args.runs, target))
    for skipped, reason in report["skipped"].items():
        warn(skipped_line(skipped, reason))
    if args.json:
        print_json(report)
    else:
        verdict = "identical to" if report["identical"] else "DIFFERENT from"
        out(
            f"rebuilt {report['entries']} memory entries of {len(report['run_ids'])} run(s): "
            f"{verdict} the live store"
        )
        for line in report["differences"] + report["output_mismatches"]:
            out(f"  {safe(line, 300, one_line=True)}")
    if not report["identical"] or report["output_mismatches"]:
        return 1
    return SKIPPED_EXIT if report["skipped"] else 0


def cmd_deadletters(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(dead_letters(settings, args.limit))
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        out("no dead letters")
    for row in rows:
        stream = safe(row.get("stream", ""), one_line=True)
        out(f"{row['id']}  {stream}  {safe(row.get('reason', ''), one_line=True)}")
    return 0


@dataclass(frozen=True)
class RebuildReport:
    run_id: str
    events: int
    digest: str
    status: str
    cycles: int
    orchestrator_digest: str | None
    comparison: str

    @property
    def equal(self) -> bool | None:
        if self.orchestrator_digest is None:
            return None
        return self.orchestrator_digest == self.digest


async def rebuild(settings: CLISettings, run_id: str) -> RebuildReport:
    events, state = await load_state(settings, run_id)
    held, how = await _orchestrator_digest(settings, run_id, state.seq)
    return RebuildReport(
        run_id, len(events), state.digest(), state.status, state.cycle_number, held, how
    )


async def _orchestrator_digest(
    settings: CLISettings, run_id: str, seq: int
) -> tuple[str | None, str]:
    redis = await optional_redis(settings)
    if redis is None:
        return None, "Redis does not answer, so the orchestrator's state cannot be asked"
    try:
        meta = text_map(await redis.hgetall(run_meta_key(run_id)))
        if meta.get("digest"):
            if meta.get("digest_shape") != AgentState.shape():
                return None, (
                    "the orchestrator's final digest was made by code whose state has "
                    f"another shape ({meta.get('digest_shape') or 'not recorded'}, now "
                    f"{AgentState.shape()}): not comparable; `replay --check` still is"
                )
            return meta["digest"], "final state recorded by the orchestrator when the run ended"
        if not meta:
            return None, "the orchestrator holds no state for this run (archive only)"
        for _ in range(3):  # the run may move on between our read and its answer
            await redis.delete(run_digest_key(run_id))
            await (await Inbox.open(redis)).send(InboxMessage(run_id=run_id, kind=DIGEST_REQUEST))
            answer = await _poll_hash(redis, run_digest_key(run_id), 10.0)
            if answer is None:
                return None, "the orchestrator did not answer within 10 s (is it running?)"
            if answer.get("digest_shape") != AgentState.shape():
                return None, "the orchestrator runs code whose state has another shape"
            if int(answer["seq"]) == seq:
                return answer["digest"], f"live state held by the orchestrator ({answer['held']})"
            await asyncio.sleep(0.2)
        return None, "the run kept moving; try again when it waits or has ended"
    finally:
        await redis.aclose()


async def _poll_hash(redis: aioredis.Redis, key: str, timeout_s: float) -> dict[str, str] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = text_map(await redis.hgetall(key))
        if answer:
            return answer
        await asyncio.sleep(0.05)
    return None


async def export(settings: CLISettings, run_id: str, out_dir: Path) -> tuple[Path, dict[str, int]]:
    check_out_dir(out_dir)
    events, _state = await load_state(settings, run_id)
    try:
        return await asyncio.to_thread(write_export, events, out_dir / f"{run_id}.jsonl")
    except OSError as exc:
        raise CLIError(
            f"cannot write the export into {out_dir} ({exc.strerror or exc}): "
            "choose another folder with --out"
        ) from None


async def replay(settings: CLISettings, run_id: str) -> tuple[int, int, str | None]:
    """``replay --check``: the log is not folded first (a log that no longer folds is
    what the check is for: it reports where, exit 1, instead of failing on the fold)."""
    events = await load_run_events(settings, run_id)
    report = replay_check(events)
    divergence = report.divergence.describe() if report.divergence else None
    return report.events, report.inputs, divergence


async def memory_rebuild(
    settings: CLISettings, run_ids: list[str], target: Path | None
) -> dict[str, Any]:
    """Rebuild the memory store of these runs (every run when none is named, leaving
    out, in ``skipped`` with the reason, each one whose log cannot be read) from their
    logs and compare it with the live store."""
    from contreact_memory.exceptions import StoreUnavailable
    from contreact_memory.rebuild import rebuild_runs

    redis = await optional_redis(settings)
    skipped: dict[str, str] = {}
    try:
        if not run_ids:
            run_ids = [
                row.run_id
                for row in await runs(settings)
                if await events_or_skip(redis, settings, row.run_id, skipped) is not None
            ]
        try:
            report = await rebuild_runs(
                redis, settings.archive_dir, run_ids, settings.memory_db, target
            )
        except StoreUnavailable as exc:
            raise CLIError(
                f"{exc}: there is no live store to compare with (the memory service makes "
                "it in its data folder: set CONTREACT_DATA_DIR, or CONTREACT_MEMORY_DB_PATH, "
                "to the service's)"
            ) from None
    finally:
        if redis is not None:
            await redis.aclose()
    return {
        "run_ids": list(report.run_ids),
        "entries": report.entries,
        "identical": report.identical,
        "differences": list(report.differences),
        "output_mismatches": list(report.output_mismatches),
        "rebuilt_path": str(report.rebuilt_path) if report.rebuilt_path else None,
        "skipped": skipped,
    }


async def dead_letters(settings: CLISettings, limit: int) -> list[dict[str, str]]:
    async with redis_client(settings) as redis:
        letters = entries(await redis.xrevrange(DEAD_LETTER_STREAM, count=limit))
    rows = []
    for entry_id, fields in letters:
        row = {k.decode(): v.decode(errors="replace") for k, v in fields.items()}
        row["id"] = entry_id.decode()
        rows.append(row)
    return rows
