"""``contreact up|down|status``: the local stack of services and its supervisor."""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
from typing import Any

from contreact_bus.exceptions import BusError
from contreact_bus.heartbeats import Heartbeat, beat_of_process, service_heartbeats
from contreact_cli.args import add_command, bounded_int, positive_seconds
from contreact_cli.connection import redis_client
from contreact_cli.output import out, print_json
from contreact_cli.settings import CLISettings
from contreact_cli.stack import processes
from contreact_cli.stack.service_waits import wait_until_up
from contreact_cli.text import safe


def register(sub: Any) -> None:
    p = add_command(
        sub, "up", cmd_up, "start a local Redis (unless REDIS_URL is set) and every service"
    )
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
        "--assessors",
        type=bounded_int(1, 64),
        default=1,
        help="assessors (rq workers rating runs: one rating at a time each)",
    )
    p.add_argument(
        "--wait",
        type=positive_seconds,
        default=120.0,
        help="seconds to wait for every service to answer (default 120)",
    )
    add_command(sub, "down", cmd_down, "stop what `contreact up` started")
    add_command(
        sub, "status", cmd_status, "show the processes and service heartbeats", listing=True
    )


def cmd_up(args: argparse.Namespace, settings: CLISettings) -> int:
    for line in processes.up(
        settings,
        llm_workers=args.llm_workers,
        memory_workers=args.memory_workers,
        orchestrators=args.orchestrators,
        embedders=args.embedders,
        assessors=args.assessors,
    ):
        out(line)
    for line in asyncio.run(wait_until_up(settings, args.wait)):
        out(line)
    out("ready: every service answers; the supervisor restarts any that dies")
    return 0


def cmd_down(args: argparse.Namespace, settings: CLISettings) -> int:
    for line in processes.down(settings):
        out(line)
    return 0


def cmd_status(args: argparse.Namespace, settings: CLISettings) -> int:
    """The supervised processes and the heartbeats. A process that runs but whose own
    heartbeat went silent serves nobody (a loop stuck in one call): it is shown as
    NOT responding, as the supervisor treats it (it restarts it after its ``stall_s``)."""
    infos = processes.processes(settings)
    try:
        beats = asyncio.run(_beats(settings))
    except (BusError, OSError):
        beats = []
    now = time.time()
    host = socket.gethostname()
    rows = []
    for i in infos:
        beat = beat_of_process(beats, i.pid, host, i.started_at) if i.alive and i.pid else None
        age = None if beat is None else round(now - beat.ts, 1)
        rows.append(
            {
                "process": i.name,
                "pid": i.pid,
                "alive": i.alive,
                "responding": None if age is None else age < settings.heartbeat_fresh_s,
                "heartbeat_s_ago": age,
                "restarts": i.restarts,
                "last_exit": i.last_exit,
                "last_error": i.last_error,
                "log": str(i.log),
            }
        )
    services = [
        {
            "service": hb.name,
            "last_heartbeat_s_ago": round(now - hb.ts, 1),
            "fresh": now - hb.ts < settings.heartbeat_fresh_s,
        }
        for hb in beats
    ]
    if args.json:
        redis_url = settings.redis_address().describe()
        print_json({"redis_url": redis_url, "processes": rows, "services": services})
        return 0
    out(f"redis: {settings.redis_address().describe()}")
    for row in rows:
        restarts = f"{row['restarts']} restart(s)" if row["restarts"] else ""
        state = "running" if row["alive"] else "NOT running"
        if row["responding"] is False:
            state = "NOT responding"
        out(
            f"  {row['process']:<14} pid {row['pid']!s:<8} "
            f"{state:<14} {restarts:<14} log {row['log']}"
        )
        if row["responding"] is False:
            out(
                f"  {'':<14} no heartbeat for {row['heartbeat_s_ago']} s: stuck; the "
                "supervisor stops and restarts it once the silence passes its limit"
            )
        if row["restarts"] and row["last_error"]:
            last = safe(str(row["last_error"]), 160, one_line=True)
            out(f"  {'':<14} last death: {row['last_exit']}: {last}")
    for svc in services:
        state = "alive" if svc["fresh"] else "silent"
        name = safe(str(svc["service"]), one_line=True)
        out(f"  {name:<40} {state} (heartbeat {svc['last_heartbeat_s_ago']}s ago)")
    if not rows and not services:
        out("nothing is running: start the services with `contreact up`")
    return 0


async def _beats(settings: CLISettings) -> list[Heartbeat]:
    async with redis_client(settings) as redis:
        return await service_heartbeats(redis)
