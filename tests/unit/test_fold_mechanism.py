"""The fold's fast mechanism (a plain dict of branches, ``evolve`` sharing the set of
fields set, ``fold_all`` folding into a private draft frozen once, stream entries
decoded straight from their JSON) changes nothing: every saved log, and a long
scripted run, folds to the same state, step by step and as a whole, as the plain
reference mechanism (``singledispatch``, whole tuples and pydantic's own
``model_copy``), and stream entries decode to the same events as the careful codec
path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contreact_bus.run_log import decode_entries
from contreact_events.catalog import Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.core import fold as fold_module
from contreact_events.core.fold import fold, fold_all
from contreact_events.core.folding import Appended, evolve
from contreact_events.core.state import AgentState
from contreact_events.exceptions import CorruptEvent, InvalidTransition, WrongRun
from contreact_events.wire.codec import event_from_fields, event_from_json, event_to_fields
from tests.support.sim import Sim, make_config, say

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


def load(path: Path) -> list[Event]:
    return [event_from_json(line) for line in path.read_bytes().splitlines()]


def reference_fold(state: AgentState, event: Event) -> AgentState:
    """``fold`` as it read before the fast mechanism: ``singledispatch``, whole tuples
    and ``model_copy``."""
    changes: dict[str, Any] = fold_module._apply(event, state)
    for key, value in changes.items():
        if isinstance(value, Appended):
            changes[key] = (*getattr(state, key), *value.items)
    pending = changes.get("pending_task_id", state.pending_task_id)
    if pending != state.pending_task_id:
        changes["pending_since"] = event.ts if pending is not None else None
        changes["task_sends"] = 1 if pending is not None else 0
    if state.task_failure is not None and "task_failure" not in changes:
        changes["task_failure"] = None
    changes["seq"] = state.seq + 1
    changes["last_event_id"] = event.event_id
    return state.model_copy(update=changes)


def scripted_run() -> list[Event]:
    replies: list[Any] = [
        say("", ("write", {"key": "k", "value": "v"}), ("list", {})),
        say("", ("read", {"key": "k"}), ("pattern_search", {"pattern": "v"})),
        say("done for this cycle"),
    ]
    sim = Sim(make_config(run_id="mechanism", cycle_count=6, operator={"mode": "auto"}))
    sim.drive(replies)
    return sim.log


def same(a: AgentState, b: AgentState) -> bool:
    """Equal fields, equal sets of fields set, equal digests: nothing tells them apart."""
    return (
        a == b
        and a.model_fields_set == b.model_fields_set
        and list(a.__dict__) == list(b.__dict__)
        and all(type(v) is type(b.__dict__[k]) for k, v in a.__dict__.items())
        and a.digest() == b.digest()
    )


def check_same_fold(events: list[Event]) -> None:
    fast = reference = AgentState(run_id=events[0].run_id)
    states = [reference]
    for n, event in enumerate(events, 1):
        fast, reference = fold(fast, event), reference_fold(reference, event)
        assert fast == reference, f"event {n} ({event.type}) folds differently"
        assert fast.model_fields_set == reference.model_fields_set, f"event {n}"
        states.append(reference)
    assert same(fold_all(events), reference)
    # The draft, from the start and from states part-way, to every length.
    for n in range(1, len(events) + 1, max(1, len(events) // 23)):
        assert same(fold_all(events[:n]), states[n]), f"fold_all of the first {n} events"
        start = states[n // 2]
        kept = start.model_dump()
        assert same(fold_all(events[n // 2 : n], start), states[n]), f"events {n // 2}-{n}"
        assert start.model_dump() == kept, "fold_all changed the state it started from"
    assert same(fold_all(iter(events)), reference)  # any iterable, not only lists


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_saved_log_folds_as_the_reference_mechanism_folds_it(path: Path) -> None:
    check_same_fold(load(path))


def test_a_long_scripted_run_folds_as_the_reference_mechanism_folds_it() -> None:
    events = scripted_run()
    assert len(events) > 90
    check_same_fold(events)


class NoteTaken(LLMResponded):
    """A test event whose branch is written in the plain style (reads whole tuples
    from the state, returns whole tuples): ``fold_all``'s draft must fold it as
    ``fold`` does, wherever it falls among branches that append."""


@fold_module._apply.register
def _(event: NoteTaken, state: AgentState) -> dict[str, Any]:
    history = state.message_history
    note = ChatMessage(role="user", content=f"note {len(history)} {state.terminal}")
    return {
        "message_history": (*history, note),
        "reflection_history": (*state.reflection_history, f"{len(state.cycle_metrics)}"),
        "cycle_metrics": state.cycle_metrics[1:],
    }


def with_notes(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for n, event in enumerate(events):
        out.append(event)
        if isinstance(event, LLMResponded) and n % 3 == 0:
            fields = {**event.__dict__, "type": "LLMResponded", "event_id": f"{event.event_id}.n"}
            out.append(NoteTaken.model_construct(**fields))
    return out


def test_a_branch_of_the_plain_style_folds_alike_in_the_draft() -> None:
    events = with_notes(scripted_run())
    assert sum(isinstance(e, NoteTaken) for e in events) > 5
    check_same_fold(events)


def test_fold_all_keeps_the_errors_of_fold() -> None:
    events = scripted_run()
    with pytest.raises(InvalidTransition, match="empty log"):
        fold_all([])
    state = fold_all(events[:10])
    assert fold_all([], state) is state
    other = evolve(state, {"run_id": "other"})
    with pytest.raises(WrongRun):
        fold_all(events[10:], other)
    with pytest.raises(InvalidTransition, match="does not fit"):
        fold_all(events[:10] + events[3:10])
    with pytest.raises(InvalidTransition, match="does not fit"):
        fold_all(events[:2] + events[3:10])  # the first event's state, past the few


def test_evolve_shares_the_fields_set_only_when_nothing_is_added() -> None:
    state = AgentState(run_id="r")
    grown = evolve(state, {"status": "running"})
    assert grown.model_fields_set == {"run_id", "status"}
    assert state.model_fields_set == {"run_id"}  # the original is untouched
    again = evolve(grown, {"status": "checking"})
    assert again.model_fields_set is grown.model_fields_set
    assert (again.status, grown.status) == ("checking", "running")


def test_stream_entries_decode_as_the_careful_path_decodes_them() -> None:
    events = scripted_run() + [e for path in LOGS for e in load(path)]
    page: list[tuple[bytes, dict[bytes, bytes]]] = []
    for n, event in enumerate(events):
        fields = {
            k.encode(): v if isinstance(v, bytes) else v.encode()
            for k, v in event_to_fields(event).items()
        }
        page.append((f"1-{n}".encode(), fields))
    decoded = decode_entries("run:x", page)
    assert [event for _, event in decoded] == events
    assert [event for _, event in decoded] == [event_from_fields(f) for _, f in page]


def test_a_bad_stream_entry_is_still_named_with_where_it_is() -> None:
    page = [(b"5-0", {b"type": b"CycleStarted", b"event": b'{"type":"CycleStarted"}'})]
    with pytest.raises(CorruptEvent, match=r"^run:x entry 5-0: "):
        decode_entries("run:x", page)
    with pytest.raises(CorruptEvent, match=r"^run:x entry 6-0: no 'event' field"):
        decode_entries("run:x", [(b"6-0", {b"type": b"CycleStarted"})])


def test_trusted_builds_what_validation_builds_and_refuses_what_a_call_refuses() -> None:
    """``trusted`` (the branches' models without validating again): the same model, the
    same fields set, as the validated call; a missing or unknown field, a model that is
    not frozen or one with a mutable default refused by name."""
    from pydantic import BaseModel, ConfigDict, Field

    from contreact_events.catalog.chat import ChatMessage, ToolCall
    from contreact_events.core.folding import trusted

    calls = (ToolCall(name="list"),)
    for kwargs in (
        {"role": "tool", "content": "x", "tool_name": "list"},
        {"role": "assistant", "content": "", "tool_calls": calls, "thinking": None},
    ):
        built, validated = trusted(ChatMessage, **kwargs), ChatMessage(**kwargs)
        assert built == validated and list(built.__dict__) == list(validated.__dict__)
        assert built.__pydantic_fields_set__ == validated.__pydantic_fields_set__
        assert built.model_dump_json() == validated.model_dump_json()
    with pytest.raises(TypeError, match=r"missing \['role'\]"):
        trusted(ChatMessage, content="x")
    with pytest.raises(TypeError, match=r"unknown \['conten'\]"):
        trusted(ChatMessage, role="tool", conten="x")

    class Loose(BaseModel):
        text: str

    class Shared(BaseModel):
        model_config = ConfigDict(frozen=True)
        items: list[str] = Field(default_factory=list)

    with pytest.raises(TypeError, match="frozen models only"):
        trusted(Loose, text="x")
    with pytest.raises(TypeError, match=r"Shared\.items: a mutable default"):
        trusted(Shared)
