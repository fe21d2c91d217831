"""The fold's engine, given the branches: ``projector(apply)`` makes ``fold`` and
``fold_all`` from a ``singledispatch`` function of one branch per event type (as
eventsourcing's ``aggregate_projector(mutate)`` is given its mutator). The branches
themselves, the domain, are in ``fold``.

A branch reads the state and returns the fields it changes. The engine adds what every
event changes (``bookkeeping``), and builds the next state without pydantic's generic
copying (``evolve``, ``assemble``); a branch builds the models it adds with ``trusted``
and a tuple it grows with ``Appended``, which lets ``fold_all`` fold a whole log into a
private mutable ``Draft`` frozen once at the end. Pure: no I/O, no clock, no randomness.

``fold`` builds exactly the tuple a branch's ``Appended`` describes; ``fold_all``
(rebuilds, the dashboard, replay's and what-if's longer spans) appends to a list in the
draft instead, so a rebuild copies a run's history once instead of at every message
(that copy was a quarter of a 10,000-event fold). The draft has every field of the
state as an attribute, plus its properties and methods, so a branch written the plain
way (read ``state.message_history``, return ``(*history, note)``) still works: reading a
field with items waiting builds its tuple then, at what the plain way always cost. To
convert such a branch, return ``Appended(...)`` and read the field only if the branch
needs its contents. A branch must not keep the ``state`` it is given (in ``fold_all``
it is the draft, which changes after the branch returns). ``trusted`` is
``model_construct`` without validating again, for frozen models with immutable
defaults only, built from an event's validated values; anything from outside the log
(config, agent text not yet in an event) is still validated where it enters.
``tests/unit/test_fold_mechanism.py`` folds every saved log and a scripted run (a
plain-style branch among them) both ways, from the start and part-way, and requires
the states, fields set and digests of the reference (``singledispatch``, whole tuples,
``model_copy``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import FunctionType
from typing import Any, NamedTuple, Protocol, TypeVar, cast

from pydantic import BaseModel

from contreact_events.catalog import Event
from contreact_events.core.state import AgentState
from contreact_events.exceptions import InvalidTransition, WrongRun
from contreact_events.wire.codec import bulk

FrozenModel = TypeVar("FrozenModel", bound=BaseModel)

Handler = Callable[[Any, AgentState], dict[str, Any]]
"""A branch: (event, state) -> the fields it changes."""


class Dispatch(Protocol):
    """What ``functools.singledispatch`` makes of the branches: the registry (its size
    tells a branch was added) and the branch of a class."""

    @property
    def registry(self) -> Mapping[Any, Any]: ...

    def dispatch(self, cls: Any) -> Callable[..., Any]: ...


Watch = Callable[[AgentState, Event], None]
"""Called with the state as it is just before each event is folded (``fold_all``'s
``before``): it may read the state, never keep it (it is the draft, which changes)."""


class FoldAll(Protocol):
    def __call__(
        self,
        events: Iterable[Event],
        state: AgentState | None = None,
        *,
        before: Watch | None = None,
    ) -> AgentState:
        """Fold a whole log; with no state, from the first event's run."""
        ...


class Projector(NamedTuple):
    """The two ways to fold that ``projector`` makes from the branches."""

    fold: Callable[[AgentState, Event], AgentState]
    fold_all: FoldAll


# -- building frozen models without pydantic's generic copying -------------------

_new = object.__new__
_set = object.__setattr__


def evolve(model: FrozenModel, changes: dict[str, Any]) -> FrozenModel:
    """``model.model_copy(update=changes)`` without its generic copying: the fold's
    hot path (about half the fold's time went to model_copy). No validation, as
    with model_copy; the values come from validated events. The set of fields set is
    shared with ``model`` when ``changes`` adds none (frozen models never change it)."""
    fields_set = model.__pydantic_fields_set__
    if not fields_set.issuperset(changes):
        fields_set = fields_set.union(changes)
    return assemble(type(model), {**model.__dict__, **changes}, fields_set)


def trusted(kind: type[FrozenModel], **values: Any) -> FrozenModel:
    """``kind(**values)`` without validation, for values taken from validated events
    (the fold's branches build a ``ChatMessage`` or a ``QueuedToolCall`` per event):
    left as ``model_construct`` leaves it (defaults filled, in the model's field order;
    the fields set are those given), and like ``evolve`` sharing the values it is given
    (a tool call's arguments dict is the event's). Measured: a ``ChatMessage`` 1.06 µs
    against 1.24 validated and 2.60 by ``model_construct``; a ``QueuedToolCall`` 1.78
    against 2.18. Only for frozen models whose defaults are immutable (checked once per
    model), so no instance shares a mutable default; a missing or unknown field is a
    ``TypeError``, as for a plain call."""
    order, required = _layout(kind)
    if not required <= values.keys() <= order.keys():
        missing = sorted(required.difference(values))
        unknown = sorted(values.keys() - order.keys())
        raise TypeError(f"{kind.__name__}: missing {missing}, unknown {unknown}")
    return assemble(kind, {**order, **values}, set(values))


_IMMUTABLE = (str, int, float, bool, bytes, tuple, frozenset, type(None))


@functools.cache
def _layout(kind: type[BaseModel]) -> tuple[dict[str, Any], frozenset[str]]:
    """(every field in order with its default, or None where required; the required)."""
    if not kind.model_config.get("frozen"):
        raise TypeError(f"trusted() builds frozen models only, not {kind.__name__}")
    order: dict[str, Any] = {}
    required = set()
    for name, field in kind.model_fields.items():
        if field.is_required():
            order[name] = None
            required.add(name)
            continue
        default = field.get_default(call_default_factory=True)
        frozen = isinstance(default, BaseModel) and default.model_config.get("frozen")
        if not (isinstance(default, _IMMUTABLE) or frozen):
            raise TypeError(f"{kind.__name__}.{name}: a mutable default, shared if trusted")
        order[name] = default
    return order, frozenset(required)


def assemble(kind: type[FrozenModel], values: dict[str, Any], fields_set: set[str]) -> FrozenModel:
    """A ``kind`` holding ``values`` (every field, in the model's order), as
    ``model_copy`` leaves it: no validation, for values taken from validated models
    and events (``evolve``, and the fold's draft when it freezes)."""
    new = _new(kind)
    _set(new, "__dict__", values)
    _set(new, "__pydantic_fields_set__", fields_set)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


# -- the engine --------------------------------------------------------------------


class Appended:
    """A branch's change that adds ``items`` at the end of a tuple field:
    ``{"message_history": Appended(reply)}`` means ``(*state.message_history, reply)``.
    ``fold`` builds exactly that tuple; a ``Draft`` only appends to a list, so a run's
    history is copied once per rebuild instead of once per message."""

    __slots__ = ("items",)

    def __init__(self, *items: Any) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"Appended{self.items!r}"


def bookkeeping(state: AgentState, event: Event, changes: dict[str, Any]) -> None:
    """What every event changes besides its branch's changes (both mechanisms)."""
    before = state.pending_task_id
    pending = changes.get("pending_task_id", before)
    if pending != before:  # a new task: its deadline counts from now
        changes["pending_since"] = event.ts if pending is not None else None
        changes["task_sends"] = 1 if pending is not None else 0
    if state.task_failure is not None and "task_failure" not in changes:
        changes["task_failure"] = None  # whatever follows a failure is the answer to it
    changes["seq"] = state.seq + 1
    changes["last_event_id"] = event.event_id


_FEW = 2
"""Up to this many events, ``fold_all`` folds event by event (what-if and replay fold a
decision's two or three events onto a state with a long history)."""


def projector(apply: Dispatch) -> Projector:
    """``fold`` and ``fold_all`` over the branches of ``apply``. Both check that an
    event is of the state's run (``WrongRun``); a branch raises ``InvalidTransition``
    for an event that does not fit the state."""
    found: dict[type, Handler] = {}
    registered = 0

    def table() -> dict[type, Handler]:
        """The branches looked up so far, by event class, in a plain dict:
        ``singledispatch``'s own call (a weak-keyed cache lookup and a wrapper per
        event) was a tenth of the fold. Emptied whenever a branch is registered."""
        nonlocal registered
        if len(apply.registry) != registered:
            found.clear()
            registered = len(apply.registry)
        return found

    def branch(kind: type) -> Handler:
        """The branch for an event class (closures, not methods: no bound method to
        build on the per-event path of ``fold``)."""
        handler = table().get(kind)
        if handler is None:
            handler = found[kind] = apply.dispatch(kind)
        return handler

    def fold(state: AgentState, event: Event) -> AgentState:
        """Apply one event to the state and return the new state."""
        if event.run_id != state.run_id:
            raise WrongRun(
                f"event {event.event_id} of run {event.run_id} applied to {state.run_id}"
            )
        changes = branch(type(event))(event, state)
        for key, value in changes.items():
            if type(value) is Appended and value.items:
                changes[key] = (*getattr(state, key), *value.items)
            elif type(value) is Appended:
                changes[key] = getattr(state, key)
        bookkeeping(state, event, changes)
        return evolve(state, changes)

    def fold_all(
        events: Iterable[Event], state: AgentState | None = None, *, before: Watch | None = None
    ) -> AgentState:
        """Fold a whole log. With no state, start from the first event's run.

        The same as ``fold`` event after event, but into one private, mutable draft
        frozen once at the end (``Draft``): no new ``AgentState`` per event, and what a
        branch ``Appended`` to a growing tuple (the message history) is copied once, not
        at every message. ``state`` itself is never changed. ``before`` sees the state
        just before each event (what a reader of the whole log needs of the states in
        between, as ``memory_calls`` does), in the same pass."""
        if before is None and isinstance(events, (list, tuple)) and len(events) <= _FEW:
            for event in events:  # a decision's few events: a draft would cost more
                if state is None:
                    state = AgentState(run_id=event.run_id)
                state = fold(state, event)
            if state is None:
                raise InvalidTransition("cannot rebuild a run from an empty log")
            return state
        it = iter(events)
        with bulk():
            first = next(it, None)
            if first is None:
                if state is None:
                    raise InvalidTransition("cannot rebuild a run from an empty log")
                return state
            draft = Draft(state if state is not None else AgentState(run_id=first.run_id))
            if before is not None:
                it = _watched(first, it, before, cast(AgentState, draft))
            else:
                draft.fold_all((first,), table, branch)
            draft.fold_all(it, table, branch)
            return draft.freeze()

    return Projector(fold, fold_all)


def _watched(
    first: Event, rest: Iterator[Event], before: Watch, draft: AgentState
) -> Iterator[Event]:
    """The events, each shown to ``before`` with the draft as it is just before it is
    folded (the draft folds an event before it asks for the next)."""
    before(draft, first)
    yield first
    for event in rest:
        before(draft, event)
        yield event


class Draft:
    """A mutable stand-in for ``AgentState`` that ``fold_all`` folds a whole log into,
    then freezes once. Private to ``fold_all``: no caller ever sees one.

    The branches get it as their ``state``: it has every field of the state as a plain
    attribute (and the state's properties and methods), so a branch written for
    ``AgentState`` (read the state, return the changes) works unchanged. A field with
    ``Appended`` items waiting is kept as (tuple, list) outside the attributes; reading
    it (a branch that reads the whole history) builds the tuple then, once."""

    __slots__ = ("__dict__", "_appended", "_changed", "_fields_set")

    def __init__(self, state: AgentState) -> None:
        self.__dict__.update(state.__dict__)
        self._appended: dict[str, tuple[tuple[Any, ...], list[Any]]] = {}
        self._changed: set[str] = set()
        self._fields_set = state.__pydantic_fields_set__

    def __getattr__(self, name: str) -> Any:  # only for a field with items appended
        waiting = self._appended.pop(name, None)
        if waiting is None:
            raise AttributeError(f"AgentState has no field {name!r}")
        base, items = waiting
        value = self.__dict__[name] = (*base, *items)
        return value

    def fold_all(
        self,
        events: Iterable[Event],
        table: Callable[[], dict[type, Handler]],
        branch: Callable[[type], Handler],
    ) -> None:
        """``fold`` of each event, in place: ``fold``'s steps, written out in one loop
        (``tests/unit/test_fold_mechanism.py`` holds the two to the same states)."""
        fields = self.__dict__
        appended = self._appended
        changed = self._changed
        handlers = table()
        run_id = fields["run_id"]
        state = cast(AgentState, self)  # what the branches read: the draft stands in
        changed.update(("seq", "last_event_id"))
        for event in events:
            if event.run_id != run_id:
                raise WrongRun(f"event {event.event_id} of run {event.run_id} applied to {run_id}")
            handler = handlers.get(type(event)) or branch(type(event))
            changes = handler(event, state)
            before = fields["pending_task_id"]
            pending = changes.get("pending_task_id", before)
            if pending != before:  # a new task: its deadline counts from now
                changes["pending_since"] = event.ts if pending is not None else None
                changes["task_sends"] = 1 if pending is not None else 0
            if fields["task_failure"] is not None and "task_failure" not in changes:
                changes["task_failure"] = None
            fields["seq"] += 1  # (in ``changed`` from the start: every event sets both)
            fields["last_event_id"] = event.event_id
            changed.update(changes)
            for key, value in changes.items():
                if type(value) is not Appended:
                    fields[key] = value
                    if appended and key in appended:
                        del appended[key]
                elif value.items:
                    waiting = appended.get(key)
                    if waiting is None:
                        waiting = appended[key] = (fields.pop(key), [])
                    waiting[1].extend(value.items)

    def freeze(self) -> AgentState:
        """The folded state, as ``fold`` would have made it event after event."""
        fields = self.__dict__
        for key, (base, items) in self._appended.items():
            fields[key] = (*base, *items)
        self._appended = {}
        values = {name: fields[name] for name in AgentState.model_fields}
        fields_set = self._fields_set
        if not fields_set.issuperset(self._changed):
            fields_set = fields_set.union(self._changed)
        return assemble(AgentState, values, fields_set)


for _name, _member in vars(AgentState).items():  # the state's properties and methods
    if _name[0] != "_" and isinstance(_member, property | FunctionType):
        assert _name not in vars(Draft), f"AgentState.{_name} hides the draft's own"
        setattr(Draft, _name, _member)
