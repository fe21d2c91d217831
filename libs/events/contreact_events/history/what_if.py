"""What-if replay: would this run have gone differently with another setting? Pure.

``what_if(events, assignments)`` re-drives ``decide`` twice over the run's recorded
inputs, in step: once with the recorded config (the baseline, which must reproduce the
log, as ``replay --check`` demands) and once with the first ``RunRequested``'s config
changed (``what_if_keys``: only settings decide reads). No model, memory service or
embedder is called: the recorded answers are fed again for as long as they apply.

They apply until the first decision in which the two parts ways: a derived event that
differs (an advisory, a step cap reached earlier, a policy reply where the recorded
run waited for a person...), one run deriving an event where the other waits, or a
task that would be sent with another payload. A different ``LLMRequested.prompt_sha256``
means the model would have been asked something else, so its recorded answer no longer
applies; a recorded operator reply is never fed past the divergence. The report names
the first cycle and step, the event on each side, the fields that differ and why in
words, or says that nothing changes and how many decisions were re-driven.

Only ``RunStarted.config`` and ``prompt_hashes`` are allowed to differ: they record the
config itself.

On a fork the copied prefix ends inside the parent's decision that logged
``CycleEnded(K)``: both re-drives are cut there, as ``replay --check`` cuts it
(``replay.fork_cut``), and the settings apply to every config the run ran under (the
request's and the ``RunForked``'s), so a what-if on a fork asks about its inherited
cycles and its own alike. A whole section (``operator={mode: human}``) is judged by the
settings it changes. ``--json`` prints ``WhatIfReport.as_json``; the exit code is 0 when
nothing changes, 1 when the run would have gone differently, 2 on an error. The cost:
two re-drives plus the comparisons, under 3x a ``replay --check`` of the same log
(``bench.log.what_if_speed``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, Literal

from contreact_events.catalog import Event
from contreact_events.catalog.control import SettingsChanged
from contreact_events.catalog.run import RunRequested
from contreact_events.config import RunConfig
from contreact_events.config.overrides import Assignment
from contreact_events.core.decide import Decision, Task, decide
from contreact_events.core.fold import fold, fold_all
from contreact_events.core.state import AgentState
from contreact_events.exceptions import ConfigError, NotReplayable
from contreact_events.history.fork import requested_config
from contreact_events.history.replay import CopiedPart, as_recorded, copied_part, fork_cut
from contreact_events.history.what_if_causes import explain, explain_task
from contreact_events.history.what_if_keys import what_if_config
from contreact_events.wire.codec import bulk
from contreact_events.wire.tasks import INPUT_EVENT_TYPES

CONFIG_RECORDS: Mapping[str, frozenset[str]] = {
    "RunStarted": frozenset({"config", "prompt_hashes"}),
}
"""Fields of derived events that record the config: they differ by design."""

DivergenceKind = Literal[
    "event", "what_if_waits", "recorded_waited", "task", "input_refused", "history"
]
"""``event``: both derive an event here, and they differ; ``what_if_waits``: the what-if
run waits for an input where the recorded run went on; ``recorded_waited``: the
what-if run goes on where the recorded run waited (the log's event here is that
input); ``task``: the events agree, a task would be sent with another payload;
``input_refused``: the what-if run would not take the recorded input; ``history``:
every derived event and task agrees, but the conversation the run ends with differs
(after its last LLM call: what the export and an evaluator are given change)."""

TASK_FIELDS_NOT_COMPARED = frozenset({"deadline", "send", "messages"})
"""A task's deadline follows the clock; an LLM call's messages are compared by the
``prompt_sha256`` of its ``LLMRequested`` (the same hash, in time independent of the
history's length)."""


@dataclass(frozen=True)
class WhatIfDivergence:
    """Where the what-if run parts from the recorded one."""

    index: int
    """Position in the log (0-based) of the recorded event the what-if replaces."""
    cycle: int
    step: int
    subject: str
    """What differs: an event type, or ``task ID``."""
    kind: DivergenceKind
    expected: Event | None
    """What the what-if run appends here; None: it waits for an input instead."""
    recorded: Event | None
    """What the log has here; None: the log ends."""
    fields: tuple[str, ...]
    """The fields that differ (``kind`` event: of the two events; task: of the tasks)."""
    cause: str
    """Why, in words."""

    def describe(self) -> str:
        return f"cycle {self.cycle}, step {self.step}: {self.cause}"

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "cycle": self.cycle,
            "step": self.step,
            "subject": self.subject,
            "kind": self.kind,
            "differing_fields": list(self.fields),
            "cause": self.cause,
            "summary": self.describe(),
            "expected": _dump(self.expected),
            "recorded": _dump(self.recorded),
        }


@dataclass(frozen=True)
class WhatIfReport:
    run_id: str
    changes: Mapping[str, tuple[Any, Any]]
    """The settings changed: dotted path -> (recorded, what-if)."""
    events: int
    decisions: int
    """Decisions re-driven (recorded inputs fed) up to the divergence or the log's end."""
    divergence: WhatIfDivergence | None
    assignments: tuple[str, ...] = field(default=())

    @property
    def changes_anything(self) -> bool:
        return self.divergence is not None

    def describe(self) -> str:
        if self.divergence is not None:
            return self.divergence.describe()
        if not self.changes:
            return (
                f"nothing changes: the recorded run already has these settings "
                f"({self.decisions} decisions re-driven)"
            )
        return (
            f"nothing changes: {self.decisions} decisions re-driven over {self.events} "
            "events, every derived event and task as recorded"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "what_if": list(self.assignments),
            "changes": {
                key: {"recorded": before, "what_if": after}
                for key, (before, after) in self.changes.items()
            },
            "events": self.events,
            "decisions": self.decisions,
            "changes_anything": self.changes_anything,
            "summary": self.describe(),
            "divergence": self.divergence.as_json() if self.divergence else None,
        }


def what_if(events: Sequence[Event], assignments: Sequence[Assignment]) -> WhatIfReport:
    """Re-drive the run with the first ``RunRequested``'s config changed; report the
    first divergence from the log. ConfigError for a refused key or a bad value;
    NotReplayable when the log itself does not replay under this code."""
    if not events:
        raise NotReplayable("cannot re-drive an empty log")
    first = events[0]
    if not isinstance(first, RunRequested):
        raise NotReplayable(
            f"run {first.run_id}: the log begins with {first.type}, not RunRequested, "
            "so there is no recorded config to change"
        )
    config = what_if_config(first.config, assignments)[0]
    changes = what_if_config(requested_config(events), assignments)[1]  # the run's own
    _refuse_changed_mid_run(events, changes)
    shown = tuple(str(a) for a in assignments)
    recorded = changed = AgentState(run_id=first.run_id)
    copy = copied_part(events)
    index = decisions = 0
    with bulk():
        while index < len(events):
            event = events[index]
            baseline, cut = _baseline(recorded, events, index, copy)
            decision = decide(changed, _changed_input(event, index, config, assignments))
            if cut and len(decision.events) > len(baseline.events):
                decision = _cut_as(decision, changed, len(baseline.events))
            decisions += 1
            divergence = _first_difference(changed, decision, baseline, events, index)
            if divergence is not None:
                return WhatIfReport(
                    first.run_id, changes, len(events), decisions, divergence, shown
                )
            recorded, changed = baseline.state, decision.state
            index += len(baseline.events)
    divergence = _history_difference(changed, recorded, len(events))
    return WhatIfReport(first.run_id, changes, len(events), decisions, divergence, shown)


def _refuse_changed_mid_run(events: Sequence[Event], changes: dict[str, Any]) -> None:
    """A setting a researcher changed while the run ran (``SettingsChanged``) takes the
    logged value there, whatever the what-if began with: refused by name, one line."""
    for index, event in enumerate(events):
        if isinstance(event, SettingsChanged):
            both = sorted(set(event.changes) & set(changes))
            if both:
                raise ConfigError(
                    f"--what-if: {', '.join(both)} was changed while the run ran (`contreact "
                    f"set`, event {index + 1}), so the logged value holds from there: fork "
                    "the run after that cycle with --set instead"
                )


def _changed_input(
    event: Event, index: int, config: RunConfig, assignments: Sequence[Assignment]
) -> Event:
    """The input with the what-if settings in every config it carries: the run's
    request, and a fork's ``RunForked`` (the child's config, the same keys changed)."""
    current = getattr(event, "config", None)
    if not isinstance(current, RunConfig):
        return event
    changed = config if index == 0 else what_if_config(current, assignments)[0]
    return event.model_copy(update={"config": changed})


def _cut_as(decision: Decision, before: AgentState, length: int) -> Decision:
    """``decision`` cut where the baseline's was (a fork's copied prefix ends there)."""
    events = decision.events[:length]
    return Decision(state=fold_all(events, before), events=events)


def _baseline(
    state: AgentState, events: Sequence[Event], index: int, copy: CopiedPart
) -> tuple[Decision, bool]:
    """The recorded config's decision on ``events[index]``; it must be the log's. A
    fork's copied prefix may end inside a decision (``replay.fork_cut``): the decision
    is then cut there, with no tasks (they were never sent), and the flag is True."""
    event = events[index]
    problem: str | None = None
    decision = decide(state, event) if event.type in INPUT_EVENT_TYPES else None
    if decision is not None and decision.ignored is None:
        cut = fork_cut(events, index, state, decision, copy)
        if cut is not None:
            cut_state, end = cut
            return Decision(state=cut_state, events=decision.events[: end - index]), True
    if decision is None:
        problem = f"the log has the decided {event.type} where an input should be"
    elif decision.ignored is not None:
        problem = f"decide now ignores the logged {event.type}: {decision.ignored}"
    else:
        for offset, expected in enumerate(decision.events):
            position = index + offset
            logged = events[position] if position < len(events) else None
            if logged is None or as_recorded(expected, logged, copy.at(position)) != logged:
                problem = f"decide yields {expected.type} where the log has " + (
                    logged.type if logged else "nothing more"
                )
                index = position
                break
    if problem is not None or decision is None:
        raise NotReplayable(
            f"run {event.run_id} does not replay under this code (event #{index + 1}: "
            f"{problem}), so a what-if cannot be compared with it; see "
            f"`contreact replay {event.run_id} --check`"
        )
    return decision, False


def _first_difference(
    before: AgentState,
    decision: Decision,
    baseline: Decision,
    events: Sequence[Event],
    index: int,
) -> WhatIfDivergence | None:
    """The first place where the what-if decision parts from the baseline's."""
    trigger = events[index]
    if decision.ignored is not None:
        state = before
        cause = (
            f"the what-if run would not take the recorded {trigger.type} "
            f"({decision.ignored}); the recorded inputs do not apply from here"
        )
        return _divergence(state, index, trigger.type, "input_refused", None, trigger, (), cause)
    pairs = zip_longest(decision.events[1:], baseline.events[1:])
    for offset, (mine, theirs) in enumerate(pairs, start=1):
        if mine is not None and theirs is not None and _same(mine, theirs):
            continue
        position = index + offset
        logged = events[position] if position < len(events) else None
        state = before
        for event in decision.events[:offset]:
            state = fold(state, event)
        subject = (mine or logged or trigger).type
        kind: DivergenceKind = (
            "what_if_waits" if mine is None else "recorded_waited" if theirs is None else "event"
        )
        fields = _differing_fields(mine, theirs) if kind == "event" else ()
        cause = explain(state, mine, theirs, logged)
        return _divergence(state, position, subject, kind, mine, logged, fields, cause)
    for mine_task, their_task in zip_longest(decision.tasks, baseline.tasks):
        fields = _task_differences(mine_task, their_task)
        if fields:
            position = index + len(baseline.events)
            logged = events[position] if position < len(events) else None
            task_id = (mine_task or their_task).task_id
            cause = explain_task(task_id, mine_task, their_task, fields)
            state = decision.state
            subject = f"task {task_id}"
            return _divergence(state, position, subject, "task", None, logged, fields, cause)
    return None


def _history_difference(
    changed: AgentState, recorded: AgentState, end: int
) -> WhatIfDivergence | None:
    """Where the conversation the what-if run ends with parts from the recorded one,
    when no derived event or task did (a setting that changes only the history after
    the last LLM call, e.g. an argument's cut in the last cycle)."""
    mine, theirs = changed.message_history, recorded.message_history
    if mine == theirs:
        return None
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
    at = min(len(mine), len(theirs)) if at is None else at
    role = (mine[at] if at < len(mine) else theirs[at]).role
    cause = (
        f"no derived event or task changes, but the conversation the run ends with does, "
        f"from message {at + 1} of {len(theirs)} ({role}): the export and an evaluator's "
        "input would differ"
    )
    return _divergence(changed, end, "message history", "history", None, None, (), cause)


def _divergence(
    state: AgentState,
    index: int,
    subject: str,
    kind: DivergenceKind,
    expected: Event | None,
    recorded: Event | None,
    fields: tuple[str, ...],
    cause: str,
) -> WhatIfDivergence:
    cycle = getattr(expected or recorded, "cycle", None)
    step = getattr(expected or recorded, "step", None)
    return WhatIfDivergence(
        index=index,
        cycle=cycle if isinstance(cycle, int) else state.cycle_number,
        step=step if isinstance(step, int) else state.step,
        subject=subject,
        kind=kind,
        expected=expected,
        recorded=recorded,
        fields=fields,
        cause=cause,
    )


def _same(mine: Event, theirs: Event) -> bool:
    ignored = CONFIG_RECORDS.get(mine.type)
    if ignored and type(mine) is type(theirs):
        theirs = theirs.model_copy(update={name: getattr(mine, name) for name in ignored})
    return mine == theirs


def _differing_fields(mine: Event | None, theirs: Event | None) -> tuple[str, ...]:
    if mine is None or theirs is None or type(mine) is not type(theirs):
        return ("type",) if mine is not None and theirs is not None else ()
    ignored = CONFIG_RECORDS.get(mine.type, frozenset())
    a, b = mine.model_dump(), theirs.model_dump()
    return tuple(sorted(k for k in a.keys() | b.keys() if k not in ignored and a[k] != b[k]))


def _task_differences(mine: Task | None, theirs: Task | None) -> tuple[str, ...]:
    if mine is None or theirs is None or type(mine) is not type(theirs):
        return () if mine is None and theirs is None else ("task",)
    names = (n for n in type(mine).model_fields if n not in TASK_FIELDS_NOT_COMPARED)
    return tuple(n for n in names if getattr(mine, n) != getattr(theirs, n))


def _dump(event: Event | None) -> dict[str, Any] | None:
    return event.model_dump(mode="json") if event is not None else None


__all__ = ["WhatIfDivergence", "WhatIfReport", "what_if"]
