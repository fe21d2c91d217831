"""What-if on a fork: its copied prefix ends inside the parent's decision (replay's cut
rule), and the changed settings apply to every config the run ran under, the
request's and the ``RunForked``'s."""

from __future__ import annotations

from pathlib import Path

from contreact_events.config.overrides import parse_assignments
from contreact_events.history.replay import replay_check
from contreact_events.history.what_if import WhatIfReport, what_if
from contreact_events.wire.codec import event_from_json
from tests.support.fork_sim import ForkSim
from tests.support.sim import say
from tests.unit.test_what_if import KnownVectors, recorded

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runlog-v4-fork.jsonl"


class KnownFork(ForkSim, KnownVectors):
    """A fork whose own cycles are embedded with the chosen vectors too."""


def child_log() -> list:  # type: ignore[type-arg]
    """The 5-cycle run of test_what_if forked at cycle 3: cycle 4's 0.74 is the child's."""
    child = KnownFork(recorded(), "child-1", 3)
    child.drive(
        [
            say("", ("write", {"key": "plan", "value": "explore"})),
            say("", ("read", {"key": "plan"})),
            say("a reflection"),
        ]
    )
    assert child.state.status == "completed"
    assert replay_check(child.log).ok
    return child.log


def run(events: list, *pairs: str) -> WhatIfReport:  # type: ignore[type-arg]
    return what_if(events, parse_assignments(pairs, option="--what-if"))


def test_a_fork_reports_the_first_cycle_of_its_own_that_changes() -> None:
    divergence = run(child_log(), "diversity.moderate_threshold=0.70").divergence
    assert divergence is not None and divergence.subject == "SimilarityAssessed"
    assert (divergence.cycle, divergence.expected.run_id) == (4, "child-1")
    assert "similarity 0.74 > 0.7" in divergence.cause


def test_a_change_that_changes_nothing_on_a_fork_says_so() -> None:
    events = child_log()
    report = run(events, "diversity.moderate_threshold=0.745")
    assert report.divergence is None, report.describe()
    assert report.decisions == sum(1 for e in events if "." not in e.event_id)


def test_the_saved_fork_log_takes_a_what_if() -> None:
    events = [event_from_json(line) for line in FIXTURE.read_bytes().splitlines()]
    assert run(events, "operator.auto_reply=unused").divergence is None
    fewer = run(events, "cycle_count=1").divergence
    assert fewer is not None and fewer.subject == "RunCompleted"


def test_a_forks_changes_are_reported_against_its_own_config() -> None:
    """Issue 28, defect 6: a child forked with ``cycle_count=5`` from a 3-cycle parent
    reports what changes against 5 (its ``RunForked`` config), not the parent's 3."""
    parent = recorded(cycle_count=3)
    child = KnownFork(parent, "child-2", 2, settings=("cycle_count=5",))
    child.drive([say("", ("write", {"key": "plan", "value": "explore"})), say("a reflection")])
    assert child.state.status == "completed" and child.state.cycle_number == 5
    fewer = run(child.log, "cycle_count=3")
    assert fewer.changes == {"cycle_count": (5, 3)}
    assert fewer.as_json()["changes"] == {"cycle_count": {"recorded": 5, "what_if": 3}}
    assert fewer.divergence is not None and fewer.divergence.subject == "RunCompleted"
    same = run(child.log, "cycle_count=5")
    assert same.changes == {} and same.divergence is None
    assert "already has these settings" in same.describe()
