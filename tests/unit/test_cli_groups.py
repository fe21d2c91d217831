"""`contreact COMMAND` builds the parser of its own command group only (the CLI's
start is paid by every command, and the suite runs it about a thousand times): the
table that says which group registers a command agrees with the groups, and a
command's process imports no other group."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from contreact_cli.args import Parser
from contreact_cli.main import COMMANDS, GROUPS, build_parser, parse


def registered(group: str) -> list[str]:
    parser = Parser(prog="contreact")
    sub = parser.add_subparsers(dest="command")
    importlib.import_module(f"contreact_cli.commands.{group}").register(sub)
    return list(sub.choices)


def test_the_table_names_each_command_by_the_group_that_registers_it() -> None:
    assert {command: group for group in GROUPS for command in registered(group)} == COMMANDS
    full = build_parser()
    commands = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert list(commands.choices) == [c for g in GROUPS for c in registered(g)]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["status"], "status"),
        (["show", "r1", "--json"], "show"),
        (["experiment", "status", "e"], "experiment"),
    ],
)
def test_a_command_parses_as_with_every_group(argv: list[str], command: str) -> None:
    alone, full = parse(argv), build_parser().parse_args(argv)
    assert alone.command == command
    assert {k: v for k, v in vars(alone).items() if k != "func"} == {
        k: v for k, v in vars(full).items() if k != "func"
    }
    assert alone.func.__qualname__ == full.func.__qualname__


def test_a_commands_process_imports_no_other_group() -> None:
    code = (
        "import json, sys\n"
        "from contreact_cli.main import parse\n"
        "parse(['status'])\n"
        "groups = (m for m in sys.modules if m.startswith('contreact_cli.commands.'))\n"
        "print(json.dumps(sorted(groups)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == ["contreact_cli.commands.stack"]


def test_a_misspelt_command_is_refused_naming_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        parse(["stauts"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'stauts'" in err and all(f"'{c}'" in err for c in COMMANDS)
