"""Printing: one line at a time on stdout, JSON for ``--json``, warnings on stderr.

Text an agent or a config supplied goes through ``text.safe`` before it gets here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from contreact_cli.text import safe

Printer = Callable[[str], None]
"""Where a command's lines go (``out``; a list's ``append`` in tests)."""


def out(line: str) -> None:
    print(line, flush=True)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def warn(line: str) -> None:
    """One line on stderr, said as a warning: the command goes on."""
    print(f"contreact: warning: {safe(line, 2000, one_line=True)}", file=sys.stderr, flush=True)
