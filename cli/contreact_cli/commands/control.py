"""``contreact set RUN|--experiment EXP KEY=VALUE ... --reason TEXT [--by NAME]``: change
settings of a live run while it runs, with who and why, as an input event
(``SettingsChanged``) the run's log keeps and its replay reads exactly.

What may change is ``config.live_settings.LIVE`` (the cycle count, the step cap, the
operator's mode and reply, deadlines, size caps); the rest is refused by name with the
reason, as a what-if refuses. The values pass the config's own validation against the
configuration in force, here and again when the orchestrator takes the change; each
setting is read at its next use (the next step, the next cycle's end...), never for
what the run has done.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_bus.runs import experiment_run_ids, load_events
from contreact_bus.streams.inbox import Inbox
from contreact_cli.args import add_command, experiment, positive_seconds, text
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.config import check_identifier
from contreact_events.config.live_settings import LIVE, live_config
from contreact_events.config.overrides import Assignment, parse_assignments
from contreact_events.core.decide import rejection
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import ConfigError
from contreact_events.wire.answers import run_paused, run_resumed, settings_changed
from contreact_events.wire.tasks import InboxMessage

BY_ENV = "CONTREACT_BY"

EPILOG = "settings a live run may change:\n" + "\n".join(
    f"  {key}: {why}" for key, why in LIVE.items()
)


def register(sub: Any) -> None:
    register_setting(sub)
    register_pausing(sub)


def register_setting(sub: Any) -> None:
    p = add_command(
        sub,
        "set",
        cmd_set,
        "change settings of a live run (or of an experiment's live runs), with a reason",
        listing=True,
        epilog=EPILOG,
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("items", nargs="+", metavar="RUN KEY=VALUE", help="the run, then settings")
    p.add_argument("--experiment", type=experiment, help="every live run of this experiment")
    p.add_argument("--reason", type=text, required=True, help="why (kept in the run's log)")
    p.add_argument("--by", help=f"who (default: ${BY_ENV}, else your login name)")
    p.add_argument("--wait", type=positive_seconds, default=15.0, help="seconds to wait (15)")


def register_pausing(sub: Any) -> None:
    for name, func, what in (
        ("pause", cmd_pause, "pause a run, an experiment's runs, or its runs of one model"),
        ("resume", cmd_resume, "let paused (or stepping) runs go on"),
    ):
        p = add_command(sub, name, func, what, listing=True)
        p.add_argument("run", nargs="?", help="the run (or --experiment)")
        p.add_argument("--experiment", type=experiment, help="every live run of this experiment")
        p.add_argument("--model", help="with --experiment: only its runs of this model")
        p.add_argument("--by", help=f"who (default: ${BY_ENV}, else your login name)")
        p.add_argument("--wait", type=positive_seconds, default=15.0, help="seconds to wait (15)")
        if name == "pause":
            p.add_argument("--reason", type=text, default="", help="why (kept in the log)")
            p.add_argument(
                "--step",
                action="store_true",
                help="go on one model call, and the tool call(s) it asks for, per `contreact step`",
            )
    p = add_command(
        sub,
        "step",
        cmd_step,
        "let a stepping run make one more model call and run the tool call(s) it asks for",
    )
    p.add_argument("run", help="the run")
    p.add_argument("--by", help=f"who (default: ${BY_ENV}, else your login name)")
    p.add_argument("--wait", type=positive_seconds, default=15.0, help="seconds to wait (15)")


def cmd_pause(args: argparse.Namespace, settings: CLISettings) -> int:
    by = _who(args.by)
    return _control(
        args,
        settings,
        lambda run_id: run_paused(run_id, by=by, reason=args.reason.strip(), stepping=args.step),
        "stepping" if args.step else "paused",
    )


def cmd_resume(args: argparse.Namespace, settings: CLISettings) -> int:
    by = _who(args.by)
    return _control(args, settings, lambda run_id: run_resumed(run_id, by=by), "resumed")


def cmd_step(args: argparse.Namespace, settings: CLISettings) -> int:
    by = _who(args.by)
    args.experiment = args.model = None
    args.json = False
    return _control(args, settings, lambda run_id: run_resumed(run_id, by=by, step=True), "stepped")


def _who(given: str | None) -> str:
    by = (given or os.environ.get(BY_ENV) or getpass.getuser()).strip()
    if not by or len(by) > 200 or "\n" in by:
        raise CLIError("say who in one line of at most 200 characters (--by NAME)")
    return by


def _control(
    args: argparse.Namespace,
    settings: CLISettings,
    make: Callable[[str], InboxMessage],
    done: str,
) -> int:
    if (args.run is None) == (args.experiment is None):
        raise CLIError(f"{args.command}: name one run, or an experiment with --experiment")
    if args.model is not None and args.experiment is None:
        raise CLIError(f"{args.command}: --model picks runs of an experiment: add --experiment")
    if args.run is not None:
        try:
            check_identifier("a run id", args.run)
        except ValueError as exc:
            raise CLIError(f"{args.command}: {exc}") from None
    rows = asyncio.run(_send_control(settings, args, make))
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            state = done if row["applied"] else "sent, not taken yet (is the orchestrator up?)"
            out(f"run {row['run_id']} {state} (in cycle {row['cycle']})")
    return 0 if all(row["applied"] for row in rows) else 1


async def _send_control(
    settings: CLISettings, args: argparse.Namespace, make: Callable[[str], InboxMessage]
) -> list[dict[str, Any]]:
    """Check each target (live; ``contreact step``: stepping), then send and wait."""
    async with redis_client(settings) as redis:
        if args.run is not None:
            targets = [args.run]
        else:
            targets = await _live_runs(redis, settings, args.experiment, model=args.model)
        planned = []
        for run_id in targets:
            state = fold_all(await load_events(redis, settings.archive_dir, run_id))
            if state.terminal:
                raise CLIError(
                    f"run {run_id} has ended ({state.status}): nothing to {args.command}"
                )
            message = make(run_id)
            event = message.to_event(datetime.now(UTC))
            reason = rejection(state, event)
            if reason is not None:
                raise CLIError(f"{args.command}: {reason}")
            planned.append((message, {"run_id": run_id, "cycle": state.cycle_number}))
        inbox = await Inbox.open(redis)
        rows = []
        for message, row in planned:
            after = await RunLog(redis).last_id(message.run_id)
            await inbox.send(message)
            row["applied"] = await _logged(redis, message, after, args.wait)
            rows.append(row)
        return rows


def cmd_set(args: argparse.Namespace, settings: CLISettings) -> int:
    items = list(args.items)
    run = None if args.experiment else items.pop(0)
    if run is not None:
        try:
            check_identifier("a run id", run)
        except ValueError as exc:
            raise CLIError(f"set: {exc}") from None
    if not items:
        raise CLIError("set: give at least one KEY=VALUE after the run")
    by = (args.by or os.environ.get(BY_ENV) or getpass.getuser()).strip()
    reason = args.reason.strip()
    if not reason or len(reason) > 2000:
        raise CLIError("set: say why in --reason (one to 2000 characters)")
    if not by or len(by) > 200 or "\n" in by:
        raise CLIError("set: say who in one line of at most 200 characters (--by NAME)")
    assignments = parse_assignments(items, option="set")
    applied = asyncio.run(
        set_settings(settings, run, args.experiment, assignments, by, reason, args.wait)
    )
    if args.json:
        print_json(applied)
        return 0
    code = 0
    for row in applied:
        if not row["applied"]:
            code = 1
        changed = ", ".join(
            f"{key} {json.dumps(old)} -> {json.dumps(new)}"
            for key, (old, new) in row["changes"].items()
        )
        state = "changed" if row["applied"] else "sent, not taken yet (is the orchestrator up?)"
        out(f"run {row['run_id']}: {changed} {state} (in cycle {row['cycle']})")
    out(f"by {safe(by, 60, one_line=True)}: {safe(reason, 200, one_line=True)}")
    return code


async def set_settings(
    settings: CLISettings,
    run: str | None,
    experiment_name: str | None,
    assignments: tuple[Assignment, ...],
    by: str,
    reason: str,
    wait_s: float,
) -> list[dict[str, Any]]:
    """Check every target run's change first (nothing is sent if one is refused), then
    send each and wait until its log holds it."""
    async with redis_client(settings) as redis:
        targets = [run] if run is not None else await _live_runs(redis, settings, experiment_name)
        planned: list[tuple[InboxMessage, dict[str, Any]]] = []
        for run_id in targets:
            events = await load_events(redis, settings.archive_dir, run_id)
            state = fold_all(events)
            if state.terminal or state.config is None:
                raise CLIError(
                    f"run {run_id} has ended ({state.status}): settings change only a live "
                    f"run; fork it with --set (`contreact fork {run_id} --at-cycle K --set ...`)"
                )
            try:
                _config, changes = live_config(state.config, assignments, cycle=state.cycle_number)
            except ConfigError as exc:
                raise CLIError(f"run {run_id}: {exc}") from None
            message = settings_changed(
                run_id, changes, by=by, reason=reason, cycle=state.cycle_number
            )
            row = {"run_id": run_id, "changes": changes, "cycle": state.cycle_number}
            planned.append((message, row))
        inbox = await Inbox.open(redis)
        rows = []
        for message, row in planned:
            after = await RunLog(redis).last_id(message.run_id)
            await inbox.send(message)
            row["applied"] = await _logged(redis, message, after, wait_s)
            rows.append(row)
        return rows


async def _live_runs(
    redis: aioredis.Redis, settings: CLISettings, name: str | None, *, model: str | None = None
) -> list[str]:
    """The experiment's runs that have not ended (``model``: only that model's)."""
    assert name is not None
    ids = await experiment_run_ids(redis, name)
    live = []
    for run_id in ids:
        state = fold_all(await load_events(redis, settings.archive_dir, run_id))
        if not state.terminal and (model is None or state.model_name == model):
            live.append(run_id)
    if not live:
        of = f" of model {model}" if model is not None else ""
        raise CLIError(f"experiment {name} has no live run{of} (`contreact runs`)")
    return live


async def _logged(redis: aioredis.Redis, message: InboxMessage, after: Any, wait_s: float) -> bool:
    """True once the run's log holds this very change (its event id is the message's)."""
    log = RunLog(redis)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for entry_id, event in await log.follow(message.run_id, after, block_ms=500):
            after = entry_id
            if event.event_id == message.msg_id:
                return True
    return False
