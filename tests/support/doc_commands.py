"""The commands of a tutorial page, read from its Markdown so that a test can run them
as written (``tests/e2e/test_tutorials.py``): every ```` ```bash ```` and
```` ```python ```` block, with what an HTML comment just before a block says about it.

- ``<!-- docs-test: skip: WHY -->``: the block is not run (WHY names what tests it).
- ``<!-- docs-test: until: TEXT -->``: the block is run again until its output has TEXT
  (ratings that rq workers record in their own time).
- ``# exit N`` after a command: the exit code it is meant to give (else 0)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

BLOCK = re.compile(
    r"(?:<!-- docs-test: (?P<directive>[^>]*?) -->\n)?```(?P<lang>bash|python)\n(?P<body>.*?)```",
    re.DOTALL,
)


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    """A shell command's words, or ``("python", CODE)`` for a Python block."""
    exit_code: int = 0


@dataclass(frozen=True)
class Block:
    commands: tuple[Command, ...]
    skip: str | None = None
    until: str | None = None


def _command(line: str) -> Command | None:
    code, _, comment = line.partition(" #")
    if line.lstrip().startswith("#"):
        return None
    words = tuple(shlex.split(code))
    if not words:
        return None
    wanted = re.match(r"\s*exit (\d+)", comment)
    return Command(words, int(wanted.group(1)) if wanted else 0)


def blocks(page: Path) -> list[Block]:
    found = []
    for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
        directive = (match.group("directive") or "").strip()
        skip = directive.removeprefix("skip:").strip() if directive.startswith("skip:") else None
        until = directive.removeprefix("until:").strip() if directive.startswith("until:") else None
        if directive and skip is None and until is None:
            raise ValueError(f"{page.name}: unknown docs-test directive {directive!r}")
        if match.group("lang") == "python":
            commands: tuple[Command, ...] = (Command(("python", match.group("body"))),)
        else:
            lines = match.group("body").splitlines()
            commands = tuple(c for c in map(_command, lines) if c is not None)
        found.append(Block(commands, skip, until))
    return found
