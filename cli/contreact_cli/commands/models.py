"""``contreact models pull|check FILE``: the Ollama models a run config or an
experiment file needs (the work is in ``ollama_models``, imported when it runs)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from contreact_cli.args import add_command
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out
from contreact_cli.settings import CLISettings
from contreact_events.config.hosts import host_problem


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "models",
        cmd_models,
        "the Ollama models a run config or an experiment needs: check which are missing, "
        "or pull them",
    )
    p.add_argument("action", choices=("pull", "check"))
    p.add_argument("file", help="a run config or an experiment file (YAML)")
    p.add_argument("--host", help="the Ollama to use instead of the one the file names")


def cmd_models(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli.stack import ollama_models as models

    problem = host_problem(args.host) if args.host is not None else None
    if problem is not None:  # (a password in it would be printed, and sent on)
        raise CLIError(f"--host {problem}")
    needs = models.needed_models(Path(args.file), args.host)
    if not needs:
        out(f"{args.file}: no model to run on Ollama (its backend needs none)")
        return 0
    reports = asyncio.run(models.sync_models(needs, out, pull=args.action == "pull"))
    if models.print_reports(reports, out):
        return 0
    if args.action == "check":
        out(f"pull them with `contreact models pull {args.file}`")
    return 1
