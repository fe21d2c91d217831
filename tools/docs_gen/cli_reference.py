"""``docs/reference/cli.md``: every command of ``contreact`` and every flag, read from the
parser the CLI itself runs (``contreact_cli.main.build_parser``)."""

from __future__ import annotations

import argparse

from tools.docs_gen.markdown import banner, code, prose, table


def _subcommands(
    parser: argparse.ArgumentParser,
) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each subcommand, in the order ``--help`` lists them."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def _argument(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            name += f" {metavar}"
    else:
        name = str(action.metavar or action.dest)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        choices = ", ".join(str(c) for c in action.choices)
    else:
        choices = ""
    default = ""
    if action.option_strings and action.nargs != 0 and action.default not in (None, [], ()):
        default = str(action.default)
    return [
        code(name),
        prose(_help(parser, action)),
        code(choices) if choices else "",
        code(default) if default else "",
    ]


def _command(path: str, summary: str, parser: argparse.ArgumentParser, level: int) -> str:
    parts = [f"{'#' * level} `{path}`\n"]
    if summary:
        parts.append(prose(summary) + "\n")
    usage = " ".join(parser.format_usage().split()).removeprefix("usage: ")
    parts.append(f"```\n{usage}\n```\n")
    rows = [
        _argument(parser, a)
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]
    if rows:
        parts.append(table(["argument", "what it is", "choices", "default"], rows))
    for name, help_text, sub in _subcommands(parser):
        parts.append(_command(f"{path} {name}", help_text, sub, min(level + 1, 4)))
    return "\n".join(parts)


def render() -> str:
    from contreact_cli.main import build_parser

    parser = build_parser()
    commands = _subcommands(parser)
    index = [[f"[`{name}`](#contreact-{name})", prose(text)] for name, text, _ in commands]
    return "\n".join(
        [
            banner("the CLI's parser (`contreact_cli.main.build_parser`)"),
            "# Commands and flags\n",
            "Every command of `contreact` and every flag it takes, as `contreact COMMAND "
            "--help` shows them. Every user error is one line, `contreact: error: ...`, with "
            "exit code 2; a run that ends failed or cancelled exits 1.\n",
            table(["command", "what it does"], index),
            *(_command(f"contreact {name}", h, sub, 2) for name, h, sub in commands),
        ]
    )
