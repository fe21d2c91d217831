"""``contreact``: start the services, run experiments, look at runs.

Every failure the user can fix is one line on stderr with the fix and exit code 2;
a run that ends failed or cancelled exits 1; Ctrl-C exits 130. Output cut short by
its reader (``contreact show RUN | head -1``) ends quietly with 141, the code of a
process ended by SIGPIPE (128 + 13), as the shell reports for other Unix tools.
"""

from __future__ import annotations

import argparse
import os
import sys

from redis.exceptions import RedisError

from contreact_analysis.exceptions import AnalysisError
from contreact_bus.exceptions import BusError
from contreact_cli.args import Parser
from contreact_cli.commands import (
    analysis,
    assess,
    control,
    corpus,
    experiment,
    forks,
    inspect,
    interview,
    models,
    runs,
    stack,
)
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.exceptions import ContReActEventError

GROUPS = (
    stack,
    runs,
    control,
    forks,
    interview,
    inspect,
    corpus,
    models,
    experiment,
    assess,
    analysis,
)
"""The command groups, in the order ``contreact --help`` lists their commands."""

BROKEN_PIPE_EXIT = 141


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="contreact", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; every error it can name is one line on stderr."""
    try:
        return int(args.func(args, CLISettings()))
    except (CLIError, ContReActEventError, BusError, AnalysisError) as exc:
        error(safe(str(exc), 2000, one_line=True))
    except RedisError as exc:  # Redis went away in the middle of a command
        error(f"Redis failed: {safe(str(exc), 300, one_line=True)}")
    except BrokenPipeError:
        raise
    except OSError as exc:  # a folder that cannot be written, a file that cannot be read
        where = f" ({safe(str(exc.filename), 300, one_line=True)})" if exc.filename else ""
        error(f"{safe(str(exc.strerror or exc), 300, one_line=True)}{where}")
    except KeyboardInterrupt:
        return 130
    return 2


def error(message: str) -> None:
    print(f"contreact: error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """The entry point. A reader that leaves early (a closed pipe) ends it quietly,
    as the Python docs' note on SIGPIPE shows: flush inside the ``try``, then point
    stdout at devnull so the flush at exit does not fail again."""
    try:
        code = run_command(build_parser().parse_args(argv))
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = BROKEN_PIPE_EXIT
    sys.exit(code)
