"""``contreact replay RUN --what-if key=value ...``: the what-if report as lines.

The report itself is ``contreact_events.history.what_if``'s (``--json`` prints its
``as_json``); here it is only put into words for a terminal, agent text made safe.
"""

from __future__ import annotations

from typing import Any

from contreact_cli.output import Printer
from contreact_cli.text import safe
from contreact_events.history.what_if import WhatIfDivergence, WhatIfReport
from contreact_events.history.what_if_keys import ALLOWED

WHAT_IF_EXITS = (
    f"A what-if may change: {', '.join(ALLOWED)}; the other settings are refused by "
    "name with the reason (the model, its options, hosts, deadlines, prompt texts, the "
    "embedder's settings). Exit codes: 0 the replay matches the log (with --what-if: "
    "nothing would change), "
    "1 it diverges (with --what-if: the run would have gone differently), 2 an error "
    "(with --what-if: a refused or unknown key, a bad value, or a log that does not "
    "replay under this code)."
)


def print_what_if(report: WhatIfReport, say: Printer) -> None:
    """The change, then where the run would have parted from the record and why."""
    changes = ", ".join(
        f"{key}={_value(after)} (recorded {_value(before)})"
        for key, (before, after) in report.changes.items()
    )
    asked = changes or ", ".join(report.assignments)
    say(f"run {report.run_id}: what if {safe(asked, 500, one_line=True)}")
    say(f"  {safe(report.describe(), 1000, one_line=True)}")
    if report.divergence is not None:
        for line in _details(report.divergence):
            say(f"  {line}")


def _details(divergence: WhatIfDivergence) -> list[str]:
    where = f"event #{divergence.index + 1} of the log"
    expected, recorded = divergence.expected, divergence.recorded
    theirs = recorded.type if recorded is not None else "nothing (the log ends)"
    match divergence.kind:
        case "what_if_waits":
            lines = [f"what-if: waits for an input; recorded ({where}): {theirs}, decided"]
        case "recorded_waited":
            mine = expected.type if expected is not None else "?"
            lines = [
                f"what-if: {mine}, decided; recorded ({where}): {theirs}, "
                "the input the recorded run waited for"
            ]
        case "task":
            lines = [f"what-if: {divergence.subject} differs in {', '.join(divergence.fields)}"]
        case "input_refused":
            lines = [f"what-if: refuses the recorded input ({where}: {theirs})"]
        case "history":
            lines = ["what-if: every event and task as recorded; the final conversation differs"]
        case _:
            mine = expected.type if expected is not None else "?"
            lines = [f"what-if: {mine}; recorded ({where}): {theirs}"]
            if expected is not None and recorded is not None and mine == theirs:
                for name in divergence.fields:
                    a, b = getattr(expected, name, None), getattr(recorded, name, None)
                    lines.append(f"  {name}: {_value(a)} (recorded {_value(b)})")
    return [safe(line, 300, one_line=True) for line in lines]


def _value(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else repr(value[:80])
    return safe(text, 100, one_line=True)
