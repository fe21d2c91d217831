"""Rebuild and deterministic replay of a logged run. Pure.

Rebuild folds the log into the AgentState. Replay re-runs ``decide`` over every
logged input event and checks that it yields exactly the events that follow it in
the log: a code change that would alter recorded behaviour shows up as the first
divergence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contreact_events.catalog import Event
from contreact_events.catalog.fork import RunForked
from contreact_events.core.decide import Decision, decide
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.diversity.corpus import scope_for
from contreact_events.wire.tasks import INPUT_EVENT_TYPES


@dataclass(frozen=True)
class Divergence:
    index: int
    """Position in the log (0-based) where replay and log part ways."""
    reason: str
    expected: Event | None = None
    logged: Event | None = None

    def describe(self) -> str:
        where = f"event #{self.index + 1}"
        if self.logged is not None:
            where += f" ({self.logged.type} {self.logged.event_id})"
        text = f"{where}: {self.reason}"
        if self.expected is not None and self.logged is not None:
            fields = _differing_fields(self.expected, self.logged)
            if fields:
                text += f"; differing fields: {', '.join(fields)}"
        return text


@dataclass(frozen=True)
class ReplayReport:
    events: int
    inputs: int
    state: AgentState
    divergence: Divergence | None

    @property
    def ok(self) -> bool:
        return self.divergence is None


def replay_check(events: Sequence[Event]) -> ReplayReport:
    """Re-run ``decide`` over the logged inputs and compare with the log."""
    if not events:
        raise ValueError("cannot replay an empty log")
    state = AgentState(run_id=events[0].run_id)
    copy = copied_part(events)
    index = inputs = 0
    while index < len(events):
        event = events[index]
        if event.type not in INPUT_EVENT_TYPES:
            reason = "the log has a decided event where replay expected an input"
            return ReplayReport(len(events), inputs, state, Divergence(index, reason, None, event))
        decision = decide(state, event)
        inputs += 1
        if decision.ignored is not None:
            reason = f"decide now ignores this logged input: {decision.ignored}"
            return ReplayReport(len(events), inputs, state, Divergence(index, reason, None, event))
        cut = fork_cut(events, index, state, decision, copy)
        if cut is not None:  # a fork's prefix ends inside this decision
            state, index = cut
            continue
        for offset, expected in enumerate(decision.events):
            position = index + offset
            if position >= len(events):
                reason = f"the log ends where decide adds {expected.type}"
                divergence = Divergence(position, reason, expected, None)
                return ReplayReport(len(events), inputs, state, divergence)
            expected = as_recorded(expected, events[position], copy.at(position))
            if expected != events[position]:
                reason = f"decide yields {expected.type}, the log has {events[position].type}"
                divergence = Divergence(position, reason, expected, events[position])
                return ReplayReport(len(events), inputs, state, divergence)
        state = decision.state
        index += len(decision.events)
    return ReplayReport(len(events), inputs, state, None)


@dataclass(frozen=True)
class CopiedPart:
    """A fork's log begins with its parent's events, copied and re-keyed
    (``history.fork.rekey``): up to ``end`` (its last ``RunForked``; 0: no fork), and
    with every corpus scope made the fork's own (``scope``)."""

    end: int = 0
    scope: str | None = None

    def at(self, position: int) -> str | None:
        """The scope a copied event at ``position`` holds (None: not a copy)."""
        return self.scope if position < self.end else None


def copied_part(events: Sequence[Event]) -> CopiedPart:
    """The copied part of a fork's log (nothing for a run that is no fork)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, RunForked):
            return CopiedPart(index, scope_for(event.config, event.run_id))
    return CopiedPart()


def fork_cut(
    events: Sequence[Event],
    index: int,
    before: AgentState,
    decision: Decision,
    copy: CopiedPart = CopiedPart(),
) -> tuple[AgentState, int] | None:
    """A fork's log copies its parent's up to ``CycleEnded(K)``; the decision that logged
    it may have gone on (cycle K+1), and the copy ends there. When the logged
    ``RunForked`` stands where ``decision`` (taken in state ``before``) has more events,
    and every event before it matches, the decision ends at the cut: returns the fold
    of what matched and the ``RunForked``'s position. None otherwise (compared as usual)."""
    logged = events[index : index + len(decision.events)]
    at = next((i for i, e in enumerate(logged) if e.type == "RunForked"), None)
    if not at:  # no RunForked in the decision's span, or the input itself is one
        return None
    matched = decision.events[:at]
    if matched[-1].type != "CycleEnded" or any(
        as_recorded(e, log, copy.at(index + n)) != log
        for n, (e, log) in enumerate(zip(matched, logged, strict=False))
    ):
        return None
    return fold_all(matched, before), index + at


NOT_RECORDED: dict[str, dict[str, object]] = {
    "RunStarted": {"prompt_hashes": {}},
    "LLMRequested": {"prompt_sha256": None},
}
"""Fields of decided events that older schema versions did not record, with the value
their upcaster gives: a logged event that has it is compared without that field."""


def as_recorded(expected: Event, logged: Event, copied_scope: str | None = None) -> Event:
    """``expected`` without the fields the logged event's version did not record, and,
    for an event of a fork's copied part, with the corpus scope the copy was re-keyed to
    (``copied_scope``; a copy made before scopes were re-keyed keeps its parent's)."""
    if type(expected) is not type(logged):
        return expected
    fields = NOT_RECORDED.get(logged.type)
    missing = {k: v for k, v in fields.items() if getattr(logged, k) == v} if fields else {}
    scope = getattr(logged, "scope", None)
    if copied_scope is not None and scope == copied_scope != getattr(expected, "scope", None):
        missing["scope"] = scope
    return expected.model_copy(update=missing) if missing else expected


def _differing_fields(expected: Event, logged: Event) -> list[str]:
    if type(expected) is not type(logged):
        return ["type"]
    a, b = expected.model_dump(), logged.model_dump()
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
