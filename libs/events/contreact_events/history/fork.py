"""Forks: a new run that begins with another run's events up to the end of cycle K,
re-keyed to it, and goes on from cycle K+1 under another model or other settings. Pure.

``plan_fork`` is the whole rule, which the orchestrator writes as the child's first
append; ``check_fork`` is its cheap part (no re-key, no fold), with which the CLI
refuses a bad request before sending it:

- the parent's log is cut right after its ``CycleEnded(K)`` (``cut_at_cycle``): the
  decision that logged it may have gone on to cycle K+1, and that part is not copied;
- every id that names the parent is re-keyed to the child (``rekey``): run and
  correlation ids, task ids and the causation ids that are task ids, ``config.run_id``
  and the corpus matches of its chunks; every corpus scope becomes the child's own
  (``run:CHILD``, or its experiment's), so its copied paragraphs are in its corpus, and
  never twice in an experiment corpus (``history.replay`` knows the copies' scope).
  Event ids stay (they are inbox message ids and ``{input}.{n}``, unique within a log);
- the child's config is the parent's as submitted (the last ``RunForked.config``, else
  ``RunRequested.config``) with the child's run id, the model and ``--set`` applied
  (``config.overrides``); what cannot be honest is refused with one line
  (``fork_refusal``).

The fold of the prefix is the parent's state at the end of cycle K under the child's
id: memory calls, message history, similarity history and the advisory cycle K earned
all come with it (``RunForked`` drops what the child's config turns off: the memory
block, the advisory). ``RunForked`` then starts the memory seed (the memory service replays
the prefix's executed memory calls, ``memory_calls``), the new model's check and
``RunStarted``, which hands over to cycle K+1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.control import SettingsChanged
from contreact_events.catalog.cycle import CycleEnded
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.run import RunRequested
from contreact_events.config import RunConfig, check_identifier
from contreact_events.config.live_settings import applied
from contreact_events.config.overrides import Assignment, apply_assignments, changed_settings
from contreact_events.core.folding import evolve
from contreact_events.core.researcher import question_problem
from contreact_events.core.state import AgentState
from contreact_events.diversity.corpus import run_scope, scope_for
from contreact_events.exceptions import ContReActEventError, ForkRefused, InvalidTransition
from contreact_events.history.memory_calls import folded_memory_calls

_ID_FIELDS = ("task_id", "causation_id", "exchange_task_id")
"""Fields whose value is an id under the run's own (``RUN/...``): re-keyed by prefix."""


@dataclass(frozen=True)
class ForkPlan:
    """The child's first append: the re-keyed prefix, then ``forked``; and the state
    the prefix folds to (the parent's at the end of cycle K, under the child's id)."""

    prefix: tuple[Event, ...]
    forked: RunForked
    state: AgentState


@dataclass(frozen=True)
class ForkCheck:
    """What the cheap part of the rule (no re-key, no fold) says of a fork: the parent's
    log cut after ``CycleEnded(at_cycle)``, the configuration in force there, and the
    child's configuration. ``contreact fork`` refuses with it before sending anything."""

    parent_run_id: str
    child_run_id: str
    at_cycle: int
    cut: list[Event]
    parent_config: RunConfig
    config: RunConfig
    question: str = ""
    """``contreact ask``: the question cycle K+1 opens with (empty: a plain fork)."""

    @property
    def prefix_len(self) -> int:
        """Events the child's log copies (its ``RunForked`` is the next)."""
        return len(self.cut)

    @property
    def changes(self) -> dict[str, tuple[Any, Any]]:
        """What differs from the parent's configuration (the run id left out)."""
        changes = changed_settings(self.parent_config, self.config)
        changes.pop("run_id", None)
        return changes


def check_fork(
    parent_events: Sequence[Event],
    *,
    child_run_id: str,
    at_cycle: int,
    model: str | None = None,
    assignments: Iterable[Assignment] = (),
    question: str = "",
) -> ForkCheck:
    """The fork's cut and configuration, refused (``ForkRefused``, one line) when it cannot
    be honest or cannot be made; the whole rule but the re-key and the fold. A
    ``question`` (``contreact ask``) opens the child's first cycle."""
    if not parent_events:
        raise ForkRefused(f"run {child_run_id}: the parent's log is empty")
    parent_id = parent_events[0].run_id
    if child_run_id == parent_id:
        raise ForkRefused(f"a fork needs a run id of its own, not its parent's ({parent_id})")
    if at_cycle < 1:
        raise ForkRefused(f"--at-cycle {at_cycle}: a fork starts after a whole cycle (1 or more)")
    if question:
        problem = question_problem(question)
        if problem is not None:
            raise ForkRefused(problem)
    cut = cut_at_cycle(parent_events, at_cycle)
    before = requested_config(cut)  # the configuration in force at the cut
    child_config = fork_config(before, child_run_id, model, assignments)
    refusal = fork_refusal(before, child_config, at_cycle)
    if refusal is not None:
        raise ForkRefused(refusal)
    return ForkCheck(parent_id, child_run_id, at_cycle, cut, before, child_config, question)


def plan_fork(
    parent_events: Sequence[Event],
    *,
    child_run_id: str,
    at_cycle: int,
    model: str | None = None,
    assignments: Iterable[Assignment] = (),
    event_id: str = "fork",
    ts: datetime,
    version: str = "",
    question: str = "",
) -> ForkPlan:
    """The fork of the run logged in ``parent_events`` at the end of cycle ``at_cycle``
    as run ``child_run_id``. Raises ``ForkRefused`` (one line) for a fork that cannot be
    honest or cannot be made.

    The re-keyed prefix is folded once (``folded_memory_calls``: its state and its
    executed memory calls in one pass); the parent's digest at K is that state under the
    parent's ids again (``state_under``), not a second fold."""
    check = check_fork(
        parent_events,
        child_run_id=child_run_id,
        at_cycle=at_cycle,
        model=model,
        assignments=assignments,
        question=question,
    )
    parent_id = check.parent_run_id
    scope = scope_for(check.config, child_run_id)
    prefix = tuple(rekey(check.cut, parent_id, child_run_id, scope=scope))
    try:
        state, calls = folded_memory_calls(prefix)
        assert state is not None  # a cut holds a CycleEnded at least
        parent_state = state_under(state, child_run_id, parent_id)
    except ContReActEventError as exc:
        reason = f"run {parent_id} cannot be forked: its log does not fold ({exc})"
        raise ForkRefused(reason) from None
    forked = RunForked(
        event_id=event_id,
        run_id=child_run_id,
        ts=ts,
        correlation_id=child_run_id,
        parent_run_id=parent_id,
        at_cycle=at_cycle,
        prefix_len=len(prefix),
        parent_digest=parent_state.digest(),
        config=check.config,
        changes=check.changes,
        memory_calls=len(calls),
        orchestrator_version=version,
        question=check.question,
    )
    return ForkPlan(prefix=prefix, forked=forked, state=state)


def requested_config(events: Sequence[Event]) -> RunConfig:
    """The run's configuration in force at the end of ``events``: as submitted (its
    fork's, else its request's), with the settings changed mid-run since
    (``SettingsChanged``, ``contreact set``) applied."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, RunForked | RunRequested):
            config = event.config
            for later in events[index + 1 :]:
                if isinstance(later, SettingsChanged):
                    config = applied(config, later.changes)
            return config
    raise ForkRefused(f"run {events[0].run_id} has no RunRequested: not a run log")


def fork_config(
    parent: RunConfig, child_run_id: str, model: str | None, assignments: Iterable[Assignment]
) -> RunConfig:
    """The parent's config with the child's run id, ``model`` and the assignments."""
    try:
        check_identifier("the fork's run id", child_run_id)
    except ValueError as exc:
        raise ForkRefused(f"{exc}: give the fork another --run-id") from None
    base = parent.model_copy(update={"run_id": child_run_id})
    if model is not None:
        problem = model_problem(model)
        if problem is not None:
            raise ForkRefused(problem)
        base = base.model_copy(update={"model_name": model})
    try:
        config = apply_assignments(base, assignments, source="fork --set")
    except ContReActEventError as exc:
        raise ForkRefused(str(exc)) from None
    if config.run_id != child_run_id:
        raise ForkRefused("--set run_id: a fork's run id is given with --run-id")
    return config


def fork_refusal(parent: RunConfig, child: RunConfig, at_cycle: int) -> str | None:
    """Why a fork of ``parent`` at the end of ``at_cycle`` as ``child`` cannot be
    honest, in one line naming the fix; None when it can."""
    if child.cycle_count <= at_cycle:
        return (
            f"a fork at cycle {at_cycle} needs cycle_count above {at_cycle} "
            f"(it is {child.cycle_count}): add --set cycle_count={at_cycle + 1} or more"
        )
    was, now = parent.diversity.embedding_model, child.diversity.embedding_model
    if was != now:
        return (
            f"the fork changes diversity.embedding_model ({was} -> {now}): the copied "
            "reflections were embedded by the parent's model, so their similarities would "
            "not compare; fork with the parent's embedding model"
        )
    shared = scope_for(parent, parent.run_id)
    if child.diversity.corpus_scope == "experiment" and scope_for(child, child.run_id) == shared:
        return (
            f"the fork would join the experiment corpus {shared}, which holds its parent's "
            f"paragraphs up to cycle {at_cycle} already (its copies would count twice): set "
            "diversity.corpus_scope=run (the fork's corpus is then its own: its copied "
            "cycles' paragraphs, not the experiment's other runs'), or experiment=OTHER "
            "(the copies join that experiment's corpus)"
        )
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def model_problem(model: str) -> str | None:
    """Why ``--model`` cannot name the fork's model (empty, or with control characters
    such as a newline or ESC, which would travel into logs and terminals), or None."""
    if not model.strip():
        return (
            f"--model {model!r} names no model: give a model name, or leave --model out "
            "to keep the parent's"
        )
    if _CONTROL.search(model):
        shown = repr(model[:60]) + ("..." if len(model) > 60 else "")
        return f"--model {shown}: a model name has no control characters (newline, ESC...)"
    return None


def cut_at_cycle(events: Sequence[Event], at_cycle: int) -> list[Event]:
    """The log up to and including ``CycleEnded(at_cycle)``; ``ForkRefused`` when the
    run has not reached the end of that cycle (yet, or ever)."""
    for index, event in enumerate(events):
        if isinstance(event, CycleEnded) and event.cycle == at_cycle:
            return list(events[: index + 1])
    ended = [e.cycle for e in events if isinstance(e, CycleEnded)]
    reached = f"its last ended cycle is {ended[-1]}" if ended else "no cycle of it has ended"
    raise ForkRefused(
        f"run {events[0].run_id} has not reached the end of cycle {at_cycle} ({reached}): "
        "fork at an ended cycle, or once it has ended"
    )


def rekey(
    events: Iterable[Event], parent_id: str, child_id: str, *, scope: str | None = None
) -> list[Event]:
    """``events`` of run ``parent_id`` as run ``child_id``'s (see the module text).
    Every corpus scope of the copies becomes ``scope``, the child's own (by default its
    run's): the copied paragraphs are in the child's corpus, and only there (never a
    second time in an experiment corpus its parent's are in already).

    Each copy is the event with its ids changed (``evolve``: the values are the validated
    event's and the checked child id; ``tests/unit/test_fork.py`` holds the copies to
    those of a dump, edit and validation, byte for byte)."""
    old, new = f"{parent_id}/", f"{child_id}/"
    renamed = scope or run_scope(child_id)
    out = []
    for event in events:
        fields = event.__dict__
        changes: dict[str, Any] = {"run_id": child_id, "correlation_id": child_id}
        for name in _ID_FIELDS:
            value = fields.get(name)
            if isinstance(value, str) and value.startswith(old):
                changes[name] = new + value[len(old) :]
        if "scope" in fields:  # ParagraphCheckRequested, ParagraphsAccepted
            changes["scope"] = renamed
        config = fields.get("config")
        if config is not None:  # RunRequested, RunStarted, and a fork of a fork's RunForked
            changes["config"] = evolve(config, {"run_id": child_id})
        matches = fields.get("matches")
        if matches:  # a paragraph check's matches of the run's own chunks
            changes["matches"] = tuple(
                evolve(m, {"matched_id": new + m.matched_id[len(old) :]})
                if m.matched_id.startswith(old)
                else m
                for m in matches
            )
        out.append(evolve(event, changes))
    return out


def state_under(state: AgentState, run_id: str, other_id: str) -> AgentState:
    """A state folded from a prefix cut after ``CycleEnded`` (see ``cut_at_cycle``) of
    run ``run_id``, as the same prefix under run ``other_id``'s ids folds: the ids such
    a state holds are its run id, its config's, and its open tasks' (a cut waits on no
    task and has no tool call queued). ``plan_fork`` takes the parent's digest from it;
    ``tests/unit/test_fork.py`` holds it to the fold of the re-keyed log."""
    if state.phase != "cycle_end" or state.pending_task_id is not None or state.tool_queue:
        raise InvalidTransition(
            f"run {state.run_id} is not at the end of a cycle (phase {state.phase}): "
            "only a fork's cut is re-keyed as a state"
        )
    old, new = f"{run_id}/", f"{other_id}/"
    open_tasks = tuple(
        evolve(t, {"task_id": new + t.task_id[len(old) :]}) if t.task_id.startswith(old) else t
        for t in state.open_tasks
    )
    changes: dict[str, Any] = {"run_id": other_id, "open_tasks": open_tasks}
    if state.config is not None:
        changes["config"] = state.config.model_copy(update={"run_id": other_id})
    return evolve(state, changes)
