"""Text that an agent or a config supplies reaches the terminal without control
characters and on one line: the model's name in `contreact run`'s header (a newline
and an ANSI escape in ``model_name`` were printed raw), the model that answered, tool
names and argument keys, the backend in every listing, and the replies a what-if
report quotes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from contreact_cli.commands.runs import show_state, what_ran
from contreact_cli.views.experiment import summary, table
from contreact_cli.views.progress import ProgressPrinter
from contreact_cli.views.what_if import print_what_if
from contreact_events.catalog.run import ModelChecked, RunRequested
from contreact_events.catalog.tool import ToolCallRequested
from contreact_events.config.overrides import parse_assignments
from contreact_events.core.fold import fold_all
from contreact_events.history.what_if import what_if
from tests.support.sim import Sim, make_config, say

HOSTILE = "evil\n\x1b[2J\x1b[31mred\r\x07\u202etxt"


def clean(lines: list[str]) -> None:
    for line in lines:
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in line), repr(line)
        assert "\u202e" not in line, repr(line)
        # The sequence is gone, not shown as "[31m" (a repr's "\\x1b[31m" says what it was)
        assert not re.search(r"(?<!\\x1b)\[(?:31m|2J)", line), repr(line)


def envelope(n: int) -> dict[str, object]:
    return {"event_id": f"e{n}", "run_id": "r1", "ts": datetime.now(UTC), "correlation_id": "r1"}


def requested() -> RunRequested:
    return RunRequested(**envelope(1), config=make_config(run_id="r1", model_name=HOSTILE))


def test_the_run_header_and_the_model_warning_are_clean_single_lines() -> None:
    lines: list[str] = []
    printer = ProgressPrinter(lines.append)
    printer.show(requested())
    printer.show(
        ModelChecked(
            **envelope(2), ok=True, backend="embedded", model=HOSTILE + "2", detail=HOSTILE
        )
    )
    printer.show(
        ToolCallRequested(
            **envelope(3),
            task_id="t1",
            cycle=1,
            step=1,
            index=0,
            tool_name=HOSTILE,
            arguments={HOSTILE: HOSTILE},
        )
    )
    printed = "\n".join(lines).splitlines()
    assert len(printed) == 4, printed  # the header, backend + WARNING, the tool call
    assert printed[0].startswith("run r1: model evil red\ufffd")
    clean(printed)


def test_show_and_the_listings_print_the_configs_text_clean() -> None:
    lines: list[str] = []
    show_state(fold_all([requested()]), lines.append, as_json=False)
    lines.append(what_ran(HOSTILE, HOSTILE + "x", HOSTILE))
    row = {
        "replica": 0, "label": "m", "letter": "A", "model": HOSTILE, "run_id": "e-m-A",
        "attempt": 1, "status": "failed", "cycle": 1, "cycle_count": 2, "step": 0,
        "tokens": 0, "cost": 0.0, "uncosted_calls": 1, "llm_seconds": 0.0, "advisory": "",
        "backend": HOSTILE,
        "resolved_model": HOSTILE + "x", "failure_reason": HOSTILE, "wall_seconds": None,
    }  # fmt: skip
    lines += table([row]) + summary([row])
    assert len("\n".join(lines).splitlines()) == len(lines)
    clean(lines)


def test_the_what_if_report_prints_the_agents_and_operators_text_clean() -> None:
    """A person's reply and the policy's (both agent-facing text) in a what-if report."""
    sim = Sim(make_config(cycle_count=1, operator={"mode": "human", "auto_reply": HOSTILE}))
    sim.drive([say("", ("send_message_to_operator", {"message": HOSTILE})), say(HOSTILE)])
    head = sim.state.waiting_for
    assert head is not None
    sim.send("OperatorReplied", task_id=head.task_id, text=HOSTILE, by="operator")
    sim.drive([say(HOSTILE)])
    for pairs in (["operator.mode=auto"], ["operator.auto_reply=ok", "cycle_count=2"]):
        lines: list[str] = []
        print_what_if(what_if(sim.log, parse_assignments(pairs)), lines.append)
        assert len(lines) >= 2
        clean(lines)
