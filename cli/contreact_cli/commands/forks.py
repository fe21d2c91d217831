"""``contreact fork RUN --at-cycle K [--model M] [--set key=value ...] [--run-id NEW]``:
a new run that begins with RUN's events up to the end of cycle K (re-keyed to it) and
runs the remaining cycles under another model or other settings. RUN is only read.

The request is checked here first with the cheap part of the core's rule
(``history.fork.check_fork``: the cut, the configuration, the refusals; no re-key, no
fold), so a fork that cannot be honest is refused at once with one line. The
orchestrator plans it (``plan_fork``) when it logs the child (the parent may have moved
on, another fork may have taken the id) and answers where this command waits
(``contreact_bus.forks``).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.experiments import existing_runs
from contreact_bus.forks import send_fork, wait_for_fork
from contreact_bus.runs import load_events
from contreact_cli.args import add_command, positive_seconds, run_id
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer, out
from contreact_cli.settings import CLISettings
from contreact_cli.stack.service_waits import required_services, wait_for_services
from contreact_cli.views.follower import follow_run
from contreact_events.config import check_identifier
from contreact_events.config.overrides import parse_assignments
from contreact_events.history.fork import check_fork
from contreact_events.wire.tasks import ForkRequest


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
    question: str = "",
    verb: str = "forked",
    id_suffix: str = "fork",
) -> int:
    """Fork ``parent`` at the end of ``at_cycle`` (``contreact fork``); with a
    ``question``, the fork's first cycle opens with it (``contreact ask``)."""
    assignments = parse_assignments(pairs)
    async with redis_client(settings) as redis:
        events = await load_events(redis, settings.archive_dir, parent)
        child = child_id or await _free_id(
            redis, settings, _default_id(parent, at_cycle, id_suffix)
        )
        check = check_fork(  # refuses here what the orchestrator would refuse
            events,
            child_run_id=child,
            at_cycle=at_cycle,
            model=model,
            assignments=assignments,
            question=question,
        )
        if await existing_runs(redis, settings.archive_dir, [child]):
            raise CLIError(f"run '{child}' already exists: fork with another --run-id")
        await wait_for_services(redis, settings, wait_s, required_services(check.config))
        request = ForkRequest(
            parent_run_id=parent,
            at_cycle=at_cycle,
            model=model,
            settings=tuple(pairs),
            question=question,
        )
        message = await send_fork(redis, child, request)
        await _logged(redis, child, message.msg_id, check.prefix_len, wait_s)
        changed = ", ".join(check.changes) or "nothing but the run id"
        out(f"run {child} {verb} from {parent} at cycle {at_cycle} (changed: {changed})")
        if not follow:
            out(f"follow it with `contreact watch {child}`")
            return 0
        return await follow_run(redis, child, out, progress_every_s=settings.progress_every_s)


async def _logged(
    redis: aioredis.Redis, child: str, msg_id: str, prefix_len: int, wait_s: float
) -> None:
    """Return once the orchestrator logged this request's ``RunForked``; raise with its
    refusal, when another request took the id, or when none answered in time."""
    wait_s = max(wait_s, 5.0)
    answer = await wait_for_fork(redis, child, msg_id, prefix_len, wait_s)
    match answer.outcome:
        case "logged":
            return
        case "refused":
            raise CLIError(f"fork refused: {answer.reason}")
        case "taken":
            raise CLIError(
                f"run '{child}' already exists (another request took the id first): "
                "fork with another --run-id"
            )
    raise CLIError(
        f"the orchestrator did not answer the fork of '{child}' within {wait_s:.0f} s: "
        "is it running (`contreact status`)? The request stays queued."
    )


def _default_id(parent: str, at_cycle: int, suffix: str = "fork") -> str:
    """``RUN-cK-fork`` (``RUN-cK-ask``...), when that is a run id (a long parent's may be
    too long)."""
    base = f"{parent}-c{at_cycle}-{suffix}"
    try:
        return check_identifier("the default fork id", base)
    except ValueError as exc:
        raise CLIError(f"{exc}: name the fork with --run-id") from None


async def _free_id(redis: aioredis.Redis, settings: CLISettings, base: str) -> str:
    """``base``, or ``base-2``, ``base-3``... whichever no run has."""
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{base}-{n}"
        if not await existing_runs(redis, settings.archive_dir, [candidate]):
            return candidate
    raise CLIError(f"no free run id like '{base}': pass --run-id")
