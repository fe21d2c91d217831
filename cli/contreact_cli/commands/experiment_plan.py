"""``contreact experiment plan FILE``: the runs, LLM calls, tokens and cost an
experiment file calls for, before anything runs, with the assumptions
(``contreact_events.history.spend_plan``). Reads the file alone: no Redis, no service."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from contreact_cli.args import add_command, bounded_int
from contreact_cli.config_file import load_experiment
from contreact_cli.output import out, warn
from contreact_cli.settings import CLISettings
from contreact_events.history.experiment_forks import planned_forks
from contreact_events.history.spend_plan import (
    Assumptions,
    ExperimentPlan,
    plan_experiment,
    plan_lines,
)


def register_plan(actions: Any) -> None:
    p = add_command(
        actions,
        "plan",
        cmd_plan,
        "the runs, LLM calls, tokens and cost an experiment file calls for, before anything "
        "runs, with the assumptions",
    )
    p.add_argument("file", help="experiment YAML")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    defaults = Assumptions()
    p.add_argument(
        "--calls-per-cycle",
        type=bounded_int(1, 10_000),
        default=defaults.calls_per_cycle,
        help="LLM calls a cycle of a model that is not scripted "
        f"(default {defaults.calls_per_cycle})",
    )
    p.add_argument(
        "--answer-tokens",
        type=bounded_int(1, 1_000_000),
        default=defaults.answer_tokens,
        help=f"tokens of each answer (default {defaults.answer_tokens})",
    )
    p.add_argument(
        "--tool-call-chars",
        type=bounded_int(0, 1_000_000),
        default=defaults.tool_call_chars,
        help=f"characters of a tool call's arguments (default {defaults.tool_call_chars})",
    )
    p.add_argument(
        "--tool-result-chars",
        type=bounded_int(0, 1_000_000),
        default=defaults.tool_result_chars,
        help=f"characters of a tool's result (default {defaults.tool_result_chars})",
    )


def experiment_plan(path: Path, assumptions: Assumptions) -> ExperimentPlan:
    """The file's plan (no Redis, no service: it reads the file alone)."""
    experiment, planned = load_experiment(path)
    forks = planned_forks(experiment, planned, source=str(path))
    return plan_experiment(experiment, planned, forks, assumptions)


def cmd_plan(args: argparse.Namespace, settings: CLISettings) -> int:
    assumptions = Assumptions(
        calls_per_cycle=args.calls_per_cycle,
        answer_tokens=args.answer_tokens,
        tool_call_chars=args.tool_call_chars,
        tool_result_chars=args.tool_result_chars,
    )
    plan = experiment_plan(Path(args.file), assumptions)
    for line in plan.warnings:
        warn(f"{args.file}: {line}")
    if args.json:
        out(json.dumps(plan.as_json(), indent=2))
        return 0
    for line in plan_lines(plan):
        out(line)
    return 0
