"""Argument types of the CLI: every value is checked where it is parsed, so a bad one
is one line naming it, never a traceback from deep inside a command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from contreact_cli.settings import CLISettings
from contreact_events.config import check_identifier

MAX_TEXT_ARG = 20_000
"""Longest free text accepted on the command line (a reply, a reason, a query)."""


def run_id(value: str) -> str:
    try:
        return check_identifier("a run id", value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def experiment(value: str) -> str:
    try:
        return check_identifier("an experiment name", value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high} (got {number})")
        return number

    parse.__name__ = "number"
    return parse


def positive_seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 < number <= 86_400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 86400 (got {value})")
    return number


def text(value: str) -> str:
    if len(value) > MAX_TEXT_ARG:
        raise argparse.ArgumentTypeError(
            f"is {len(value)} characters long; the limit is {MAX_TEXT_ARG}"
        )
    return value


class Parser(argparse.ArgumentParser):
    """argparse with one line per user error (``contreact: error: ...``, exit 2),
    as every other error of the CLI, instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("contreact").strip()
        hint = f"`contreact {command} --help`" if command else "`contreact --help`"
        print(f"contreact: error: {message} (see {hint})", file=sys.stderr)
        raise SystemExit(2)


Handler = Callable[[argparse.Namespace, CLISettings], int]
"""A command: the parsed arguments and the settings in, the exit code out."""


def add_command(
    sub: Any,
    name: str,
    func: Handler,
    help_text: str,
    *,
    listing: bool = False,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` shows ``help_text`` (and ``epilog`` after the
    options); ``listing`` adds ``--json``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text, epilog=epilog
    )
    parser.set_defaults(func=func)
    if listing:
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser
