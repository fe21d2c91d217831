"""``contreact``: start the services, run experiments, look at runs.

Every failure the user can fix is one line on stderr with the fix and exit code 2;
a run that ends failed or cancelled exits 1; Ctrl-C exits 130. Output cut short by
its reader (``contreact show RUN | head -1``) ends quietly with 141, the code of a
process ended by SIGPIPE (128 + 13), as the shell reports for other Unix tools.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from redis.exceptions import RedisError

from contreact_analysis.exceptions import AnalysisError
from contreact_bus.exceptions import BusError
from contreact_cli.args import Parser
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.exceptions import ContReActEventError

GROUPS = (
    "stack",
    "runs",
    "control",
    "forks",
    "interview",
    "inspect",
    "corpus",
    "models",
    "experiment",
    "assess",
    "analysis",
)
"""The command groups (modules of ``contreact_cli.commands``), in the order
``contreact --help`` lists their commands."""

COMMANDS: dict[str, str] = {
    **dict.fromkeys(("up", "down", "status"), "stack"),
    **dict.fromkeys(("run", "watch", "runs", "show", "reply", "cancel"), "runs"),
    **dict.fromkeys(("set", "pause", "resume", "step"), "control"),
    "fork": "forks",
    **dict.fromkeys(("ask", "query", "queries"), "interview"),
    **dict.fromkeys(("rebuild", "replay", "export", "memory-rebuild", "deadletters"), "inspect"),
    **dict.fromkeys(("similarity", "corpus", "search"), "corpus"),
    "models": "models",
    "experiment": "experiment",
    "assess": "assess",
    **dict.fromkeys(("analyze", "conditions", "report"), "analysis"),
}
"""The group that registers each command. ``contreact COMMAND`` imports only its own
group: with all eleven a command started in 0.79 CPU-s, with its own in 0.43
(`contreact status`) to 0.73 (`contreact experiment`), and the suite runs the CLI about
560 times. A unit test fails when this disagrees with what the groups register."""

BROKEN_PIPE_EXIT = 141


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone when it is one (else of
    every command: `contreact --help`, a misspelt command listing the right ones)."""
    parser = Parser(prog="contreact", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    own = COMMANDS.get(command or "")
    for group in (own,) if own else GROUPS:
        importlib.import_module(f"contreact_cli.commands.{group}").register(sub)
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``argv`` (default: the process's) parsed by its own command's parser."""
    args = list(sys.argv[1:] if argv is None else argv)
    return build_parser(args[0] if args else None).parse_args(args)


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
        code = run_command(parse(argv))
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = BROKEN_PIPE_EXIT
    sys.exit(code)
