"""``contreact run|watch|runs|show|reply|cancel``: one run at a time."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.experiments import existing_runs
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_bus.streams.inbox import Inbox
from contreact_cli.args import add_command, positive_seconds, run_id
from contreact_cli.args import text as free_text
from contreact_cli.config_file import load_config
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer, out, print_json, warn
from contreact_cli.runs.model_checks import compaction_model_problem
from contreact_cli.runs.records import load_state, run_meta, runs
from contreact_cli.settings import CLISettings
from contreact_cli.stack.service_waits import required_services, wait_for_services
from contreact_cli.text import safe
from contreact_cli.views.follower import exit_code, follow_run
from contreact_cli.views.operator_prompt import send_reply
from contreact_cli.views.progress import ProgressPrinter
from contreact_events.config import RunConfig
from contreact_events.config.spend import COST_UNIT, budget_text, cost_text, missing_price
from contreact_events.core.fold import fold_all
from contreact_events.core.state import TERMINAL_STATUSES, AgentState
from contreact_events.wire.answers import run_cancelled, run_requested


def register(sub: Any) -> None:
    p = add_command(sub, "run", cmd_run, "submit a run from a config file and follow its progress")
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
    p.add_argument(
        "--step",
        action="store_true",
        help=(
            "rest before every model call: `contreact step RUN` lets it make one and run the "
            "tool call(s) it asks for"
        ),
    )
    p = add_command(sub, "watch", cmd_watch, "follow a run's progress")
    p.add_argument("run", type=run_id)
    add_command(sub, "runs", cmd_runs, "list runs with their status", listing=True)
    p = add_command(
        sub, "show", cmd_show, "a run's state, metrics per cycle and reflections", listing=True
    )
    p.add_argument("run", type=run_id)
    p = add_command(sub, "reply", cmd_reply, "answer the agent's message to the operator")
    p.add_argument("run", type=run_id)
    p.add_argument("text", type=free_text)
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=10.0,
        help="seconds to wait (10)",
    )
    p = add_command(sub, "cancel", cmd_cancel, "cancel a run")
    p.add_argument("run", type=run_id)
    p.add_argument("--reason", type=free_text, default="cancelled by the operator")
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=10.0,
        help="seconds to wait (10)",
    )


def cmd_run(args: argparse.Namespace, settings: CLISettings) -> int:
    config = load_config(Path(args.config), run_id=args.run_id)
    for model in config.priced_models:  # the run's, and the analyses' model
        unpriced = missing_price(config.prices, model)
        if unpriced is not None:
            warn(f"{args.config}: {unpriced}")
    return asyncio.run(
        submit_run(settings, config, out, follow=not args.detach, wait_s=args.wait, step=args.step)
    )


def cmd_watch(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(watch_run(settings, args.run, out))


def cmd_runs(args: argparse.Namespace, settings: CLISettings) -> int:
    rows = asyncio.run(runs(settings))
    if args.json:
        print_json([row.model_dump(mode="json") for row in rows])
        return 0
    if not rows:
        out("no runs yet: `contreact run CONFIG` starts one")
    for row in rows:
        status = safe(row.status, 40, one_line=True)
        out(
            f"{row.run_id:<40} {status:<17} cycle {row.cycle}/{row.cycle_count}  "
            + what_ran(row.model, row.resolved_model, row.backend)
            + (f" on {safe(row.host, 80, one_line=True)}" if row.host else "")
        )
    return 0


def cmd_show(args: argparse.Namespace, settings: CLISettings) -> int:
    _events, state = asyncio.run(load_state(settings, args.run))
    show_state(state, out, as_json=args.json)
    return 0


def cmd_reply(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(reply(settings, args.run, args.text, out, wait_s=args.wait))


def cmd_cancel(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(cancel(settings, args.run, args.reason, out, wait_s=args.wait))


async def submit_run(
    settings: CLISettings,
    config: RunConfig,
    out: Printer,
    *,
    follow: bool = True,
    wait_s: float = 15.0,
    step: bool = False,
) -> int:
    """Submit the run (``step``: stepping, part of the request, so it rests before its
    first model call)."""
    async with redis_client(settings) as redis:
        await wait_for_services(redis, settings, wait_s, required_services(config))
        run_id = config.run_id
        if await existing_runs(redis, settings.archive_dir, [run_id]):  # log, listing, archive
            raise CLIError(
                f"run '{run_id}' already exists: set another run_id in the config or pass --run-id"
            )
        problem = await compaction_model_problem(redis, config, wait_s)
        if problem is not None:
            raise CLIError(problem)
        request = run_requested(config, stepping=step)
        await (await Inbox.open(redis)).send(request)
        await _wait_for_decision(redis, run_id, request.msg_id, wait_s)
        if step:
            out(f"run {run_id} is stepping: `contreact step {run_id}` for each model call")
        if not follow:
            out(f"run {run_id} accepted; follow it with `contreact watch {run_id}`")
            return 0
        return await follow_run(redis, run_id, out, progress_every_s=settings.progress_every_s)


async def _wait_for_decision(
    redis: aioredis.Redis, run_id: str, msg_id: str, wait_s: float
) -> None:
    """Return once the orchestrator took this request as the run's first event;
    raise when it took another request for the same run id, or none in time."""
    deadline = time.monotonic() + max(wait_s, 5.0)
    while time.monotonic() < deadline:
        first = await RunLog(redis).follow(run_id, "0-0", block_ms=250)
        if first:
            event = first[0][1]
            if event.event_id == msg_id:
                return
            raise CLIError(
                f"run '{run_id}' already exists (another submission was taken first): "
                "set another run_id in the config or pass --run-id"
            )
    raise CLIError(
        f"the orchestrator did not take run '{run_id}' within {max(wait_s, 5.0):.0f} s: "
        "is it running (`contreact status`)? The request stays queued."
    )


async def watch_run(settings: CLISettings, run_id: str, out: Printer) -> int:
    async with redis_client(settings) as redis:
        if not await RunLog(redis).exists(run_id):
            events = await load_events(None, settings.archive_dir, run_id)
            printer = ProgressPrinter(out)
            for event in events:
                printer.show(event)
            return exit_code(fold_all(events))
        return await follow_run(redis, run_id, out, progress_every_s=settings.progress_every_s)


async def reply(
    settings: CLISettings, run_id: str, text: str, out: Printer, *, wait_s: float = 10.0
) -> int:
    async with redis_client(settings) as redis:
        meta = await run_meta(redis, run_id)
        task_id = meta.get("waiting_task", "")
        if not task_id:
            raise CLIError(
                f"run {run_id} is not waiting for the operator "
                f"(status: {safe(meta.get('status', 'unknown'), 40, one_line=True)})"
            )
        after = await RunLog(redis).last_id(run_id)
        await send_reply(redis, run_id, task_id, text)
        accepted = await _wait_for_event(redis, run_id, after, "OperatorReplied", wait_s)
        out(
            "reply delivered"
            if accepted
            else "reply sent; the orchestrator has not taken it yet (is it running?)"
        )
        return 0 if accepted else 1


async def cancel(
    settings: CLISettings, run_id: str, reason: str, out: Printer, *, wait_s: float = 10.0
) -> int:
    async with redis_client(settings) as redis:
        meta = await run_meta(redis, run_id)
        if meta.get("status") in TERMINAL_STATUSES:
            raise CLIError(f"run {run_id} has already ended ({meta['status']})")
        message = run_cancelled(run_id, reason)
        after = await RunLog(redis).last_id(run_id)
        await (await Inbox.open(redis)).send(message)
        accepted = await _wait_for_event(redis, run_id, after, "RunCancelled", wait_s)
        out(
            f"run {run_id} cancelled"
            if accepted
            else "cancel sent; the orchestrator has not taken it yet (is it running?)"
        )
        return 0 if accepted else 1


async def _wait_for_event(
    redis: aioredis.Redis, run_id: str, after: bytes | str, event_type: str, timeout_s: float = 10.0
) -> bool:
    log = RunLog(redis)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry_id, event in await log.follow(run_id, after, block_ms=500):
            after = entry_id
            if event.type == event_type:
                return True
    return False


def what_ran(model: str, resolved_model: str, backend: str | None) -> str:
    """``model (backend)``, saying so loudly when another model answered than the
    one configured (``auto`` falling back to the embedded model)."""
    shown = safe(model, 60, one_line=True)
    if resolved_model and resolved_model != model:
        shown = f"{safe(resolved_model, 60, one_line=True)} INSTEAD OF {shown}"
    return f"{shown} ({safe(backend or '?', 60, one_line=True)})"


def show_state(state: AgentState, out: Printer, *, as_json: bool) -> None:
    if as_json:
        out(json.dumps(state.model_dump(mode="json"), indent=2))
        return
    config = state.config
    out(f"run {state.run_id}: {state.listed_status} (phase {state.phase})")
    if config is not None:
        backend: str = state.backend or config.backend
        if backend != config.backend:
            backend = f"{backend}, configured {config.backend}"
        out(
            f"  model {what_ran(config.model_name, state.resolved_model, backend)}, "
            f"cycle {state.cycle_number}/{config.cycle_count}, "
            f"max {config.max_steps_per_cycle} steps per cycle, operator {config.operator.mode}"
        )
    if state.failure_reason:
        out(f"  reason: {safe(state.failure_reason, one_line=True)}")
    if state.stop_reason:
        out(f"  stopped: {safe(state.stop_reason, one_line=True)}")
    if state.started_at is not None:
        unknown = state.uncosted_calls
        out(
            f"  spend: {cost_text(state.spent_cost, unknown)} {COST_UNIT}, "
            f"{state.spent_tokens:,} tokens"
            + (f" ({unknown} call(s) of unknown cost)" if unknown else "")
            + (f"; budget {budget_text(config.budget)}" if config and config.budget else "")
        )
    head = ("cycle", "tools", "mem ops", "to op", "resp chars", "write chars", "tokens", "llm s")
    if state.cycle_metrics:
        out("  " + "  ".join(f"{h:>11}" for h in head))
    for number, m in enumerate(state.cycle_metrics, start=1):
        cells = (
            number,
            m.tool_calls,
            m.memory_ops_total,
            m.messages_to_operator,
            m.response_chars,
            m.memory_write_chars,
            m.prompt_tokens + m.completion_tokens,
            f"{m.llm_seconds:.1f}",
        )
        out("  " + "  ".join(f"{c:>11}" for c in cells))
    for number, text in enumerate(state.reflection_history, start=1):
        out(f"  reflection {number}: {safe(text, 200, one_line=True) or '(empty)'}")
    if state.waiting_for is not None:
        out(f'  waiting for the operator: `contreact reply {state.run_id} "..."`')
