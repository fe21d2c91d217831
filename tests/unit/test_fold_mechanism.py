"""The fold's fast mechanism (a plain dict of branches, ``evolve`` sharing the set of
fields set, stream entries decoded straight from their JSON) changes nothing: every
saved log, and a long scripted run, folds to the same state, step by step, as the
plain reference mechanism (``singledispatch`` and pydantic's own ``model_copy``), and
stream entries decode to the same events as the careful codec path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contreact_bus.run_log import decode_entries
from contreact_events.catalog import Event
from contreact_events.core import fold as fold_module
from contreact_events.core.fold import fold, fold_all
from contreact_events.core.state import AgentState, evolve
from contreact_events.exceptions import CorruptEvent
from contreact_events.wire.codec import event_from_fields, event_from_json, event_to_fields
from tests.support.sim import Sim, make_config, say

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


def load(path: Path) -> list[Event]:
    return [event_from_json(line) for line in path.read_bytes().splitlines()]


def reference_fold(state: AgentState, event: Event) -> AgentState:
    """``fold`` as it read before the fast mechanism: ``singledispatch`` and
    ``model_copy``."""
    changes: dict[str, Any] = fold_module._apply(event, state)
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


def check_same_fold(events: list[Event]) -> None:
    fast = reference = AgentState(run_id=events[0].run_id)
    for n, event in enumerate(events, 1):
        fast, reference = fold(fast, event), reference_fold(reference, event)
        assert fast == reference, f"event {n} ({event.type}) folds differently"
        assert fast.model_fields_set == reference.model_fields_set, f"event {n}"
    assert fold_all(events).digest() == reference.digest()


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_saved_log_folds_as_the_reference_mechanism_folds_it(path: Path) -> None:
    check_same_fold(load(path))


def test_a_long_scripted_run_folds_as_the_reference_mechanism_folds_it() -> None:
    events = scripted_run()
    assert len(events) > 90
    check_same_fold(events)


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
