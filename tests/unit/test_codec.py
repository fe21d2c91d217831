"""The codec and the catalog: round trips, upcasting, refusal of newer versions,
corrupt and unknown events, and the generated JSON schema."""

from __future__ import annotations

import importlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from contreact_events.catalog import EVENT_CLASSES, Event, upcast
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.exceptions import (
    CorruptEvent,
    InvalidTransition,
    NewerSchemaVersion,
    UnknownEventType,
    WrongRun,
)
from contreact_events.wire.codec import (
    event_from_fields,
    event_from_json,
    event_to_fields,
    event_to_json,
    message_from_fields,
    message_to_fields,
)
from contreact_events.wire.schema import SCHEMA_DIR, render, schemas
from contreact_events.wire.tasks import InboxMessage, LLMTask
from tests.support.sim import T0, Sim, make_config, say


@pytest.fixture
def log() -> list[Event]:
    sim = Sim(make_config(cycle_count=2, operator={"mode": "auto"}, diversity={"enabled": True}))
    sim.drive(
        [
            say(
                "",
                ("write", {"key": "k", "value": "v"}),
                ("send_message_to_operator", {"message": "hi"}),
                ("nope", {}),
            ),
            say("reflection ✓ {not a format}"),
        ]
    )
    return sim.log


def test_every_event_round_trips_through_json_and_stream_fields(log) -> None:
    assert {e.type for e in log} >= {
        "RunRequested",
        "ToolCallCompleted",
        "OperatorReplied",
        "CycleEnded",
        "RunCompleted",
    }
    for event in log:
        assert event_from_json(event_to_json(event)) == event
        fields = {
            k.encode(): v if isinstance(v, bytes) else v.encode()
            for k, v in event_to_fields(event).items()
        }
        assert event_from_fields(fields) == event


def test_an_event_of_a_newer_schema_version_is_refused_clearly(log) -> None:
    data = orjson.loads(event_to_json(log[0]))
    data["schema_version"] = 99
    with pytest.raises(NewerSchemaVersion, match=r"version 99.*upgrade contreact"):
        event_from_json(orjson.dumps(data))


def test_older_versions_are_upcast_by_chained_functions() -> None:
    def v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
        data["text"] = data.pop("reflection")
        return data

    def v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
        data.setdefault("complete", True)
        return data

    stored = {"type": "ReflectionRecorded", "schema_version": 1, "reflection": "hi"}
    chain = {("ReflectionRecorded", 1): v1_to_v2, ("ReflectionRecorded", 2): v2_to_v3}
    versions = {"ReflectionRecorded": 3}
    assert upcast(stored, chain, versions) == {
        "type": "ReflectionRecorded",
        "schema_version": 3,
        "text": "hi",
        "complete": True,
    }
    with pytest.raises(UnknownEventType, match="no upcaster"):
        upcast(stored, {}, versions)


def test_corrupt_and_unknown_events_are_named_errors(log) -> None:
    with pytest.raises(CorruptEvent, match="not valid JSON"):
        event_from_json(b"{nope", where="run:{x} entry 1-0")
    with pytest.raises(CorruptEvent, match="expected a JSON object"):
        event_from_json(b"[1, 2]")
    data = orjson.loads(event_to_json(log[0]))
    data["type"] = "Teleported"
    with pytest.raises(UnknownEventType, match="Teleported"):
        event_from_json(orjson.dumps(data))
    data = orjson.loads(event_to_json(log[1]))
    del data["ok"]
    with pytest.raises(CorruptEvent, match="ok"):
        event_from_json(orjson.dumps(data))
    with pytest.raises(CorruptEvent, match="no 'event' field"):
        event_from_fields({b"type": b"RunRequested"})


def test_bus_messages_round_trip_and_bad_ones_are_named() -> None:
    task = LLMTask(
        kind="check",
        task_id="r/check",
        run_id="r",
        backend="auto",
        model="m",
        host="http://localhost:11434",
    )
    fields = {k.encode(): v for k, v in message_to_fields(task).items()}
    assert message_from_fields(LLMTask, fields) == task
    with pytest.raises(CorruptEvent, match="not a valid LLMTask"):
        message_from_fields(LLMTask, {b"msg": b'{"kind": "dance"}'})
    with pytest.raises(CorruptEvent, match="not an input"):
        InboxMessage(run_id="r", kind="RunStarted").to_event(log_time())
    with pytest.raises(CorruptEvent, match="LLMResponded"):
        InboxMessage(run_id="r", kind="LLMResponded", data={"message": 5}).to_event(log_time())


def log_time() -> datetime:
    return T0


def test_fold_refuses_foreign_and_impossible_events(log) -> None:
    with pytest.raises(WrongRun):
        fold(AgentState(run_id="other"), log[0])
    with pytest.raises(InvalidTransition, match="phase 'new'"):
        fold(AgentState(run_id=log[0].run_id), log[3])


def test_the_committed_json_schema_matches_the_models() -> None:
    for name, schema in schemas().items():
        path = SCHEMA_DIR / name
        assert path.exists(), f"{path} is missing: run `make schema`"
        assert path.read_text() == render(schema), (
            f"{path} drifted from the models: run `make schema` and commit the result"
        )
    events = json.loads((SCHEMA_DIR / "events.schema.json").read_text())
    assert set(events["x-schema-versions"]) == set(EVENT_CLASSES)


@pytest.mark.parametrize("module", ["contreact_events.wire.schema", "contreact_ui.schema"])
def test_a_generator_asked_for_help_prints_it_and_writes_nothing(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m ... --help` once wrote a folder named `--help`."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main(["--help"])
    assert stopped.value.code == 0
    assert "usage: python -m " + module in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
