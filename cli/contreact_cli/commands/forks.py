"""``contreact fork RUN --at-cycle K [--model M] [--set key=value ...] [--run-id NEW]``:
a new run that begins with RUN's events up to the end of cycle K (re-keyed to it) and
runs the remaining cycles under another model or other settings. RUN is only read.

The request is checked here first with the core's own rule (``history.fork.plan_fork``),
so a fork that cannot be honest is refused at once with one line; the orchestrator
checks it again when it logs the child (the parent may have moved on, another fork
may have taken the id) and says why where this command waits.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.experiments import existing_runs
from contreact_bus.inbox import Inbox
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_cli.args import add_command, positive_seconds, run_id
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer, out
from contreact_cli.settings import CLISettings
from contreact_cli.stack.service_waits import required_services, wait_for_services
from contreact_cli.views.follower import follow_run
from contreact_events.config.overrides import parse_assignments
from contreact_events.history.fork import plan_fork
from contreact_events.names import run_fork_refusal_key
from contreact_events.wire.tasks import ForkRequest, fork_requested


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "fork",
        cmd_fork,
        "a new run from RUN's state at the end of cycle K, under another model or settings",
    )
    p.add_argument("run", type=run_id, help="the parent run (read only)")
    p.add_argument("--at-cycle", type=int, required=True, help="the parent's cycle K to fork after")
    p.add_argument("--model", help="the model of the remaining cycles (default: the parent's)")
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a run setting for the fork, e.g. diversity.moderate_threshold=0.75 (repeatable)",
    )
    p.add_argument("--run-id", type=run_id, help="the fork's run id (default: RUN-cK-fork)")
    p.add_argument("--detach", action="store_true", help="return once the fork is logged")
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=60.0,
        help="seconds to wait for the services to answer (default 60)",
    )


def cmd_fork(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(
        fork_run(
            settings,
            args.run,
            args.at_cycle,
            model=args.model,
            pairs=args.settings,
            child_id=args.run_id,
            out=out,
            follow=not args.detach,
            wait_s=args.wait,
        )
    )


async def fork_run(
    settings: CLISettings,
    parent: str,
    at_cycle: int,
    *,
    model: str | None = None,
    pairs: list[str] | tuple[str, ...] = (),
    child_id: str | None = None,
    out: Printer = out,
    follow: bool = True,
    wait_s: float = 60.0,
) -> int:
    assignments = parse_assignments(pairs)
    async with redis_client(settings) as redis:
        events = await load_events(redis, settings.archive_dir, parent)
        child = child_id or await _free_id(redis, settings, f"{parent}-c{at_cycle}-fork")
        plan = plan_fork(  # refuses here what the orchestrator would refuse
            events,
            child_run_id=child,
            at_cycle=at_cycle,
            model=model,
            assignments=assignments,
            ts=datetime.now(UTC),
        )
        if await existing_runs(redis, settings.archive_dir, [child]):
            raise CLIError(f"run '{child}' already exists: fork with another --run-id")
        await wait_for_services(redis, settings, wait_s, required_services(plan.forked.config))
        request = ForkRequest(
            parent_run_id=parent, at_cycle=at_cycle, model=model, settings=tuple(pairs)
        )
        message = fork_requested(child, request)
        await (await Inbox.open(redis)).send(message)
        await wait_for_fork(redis, child, message.msg_id, wait_s)
        changed = ", ".join(plan.forked.changes) or "nothing but the run id"
        out(f"run {child} forked from {parent} at cycle {at_cycle} (changed: {changed})")
        if not follow:
            out(f"follow it with `contreact watch {child}`")
            return 0
        return await follow_run(redis, child, out, progress_every_s=settings.progress_every_s)


async def wait_for_fork(redis: aioredis.Redis, child: str, msg_id: str, wait_s: float) -> None:
    """Return once the orchestrator logged this request's ``RunForked``; raise with its
    refusal, when another request took the id, or when none answered in time."""
    deadline = time.monotonic() + max(wait_s, 5.0)
    log = RunLog(redis)
    while time.monotonic() < deadline:
        refusal = await redis.get(run_fork_refusal_key(child, msg_id))
        if refusal is not None:
            text = refusal.decode() if isinstance(refusal, bytes) else str(refusal)
            raise CLIError(f"fork refused: {text}")
        forks = [e for _, e in await log.read(child) if e.type == "RunForked"]
        if forks:
            if forks[-1].event_id == msg_id:
                return
            raise CLIError(
                f"run '{child}' already exists (another request took the id first): "
                "fork with another --run-id"
            )
        await asyncio.sleep(0.1)
    raise CLIError(
        f"the orchestrator did not answer the fork of '{child}' within {max(wait_s, 5.0):.0f} s: "
        "is it running (`contreact status`)? The request stays queued."
    )


async def _free_id(redis: aioredis.Redis, settings: CLISettings, base: str) -> str:
    """``base``, or ``base-2``, ``base-3``... whichever no run has."""
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{base}-{n}"
        if not await existing_runs(redis, settings.archive_dir, [candidate]):
            return candidate
    raise CLIError(f"no free run id like '{base}': pass --run-id")
