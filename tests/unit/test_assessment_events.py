"""Assessment events: their own union and schema versions, outside the run log; the
codec reads them from stream fields and JSON, and saved records of every released
version still decode and still verify against the run log they rated."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from contreact_events.catalog import (
    ASSESSMENT_EVENT_CLASSES,
    ASSESSMENT_SCHEMA_VERSIONS,
    EVENT_CLASSES,
    AssessmentFailed,
    AssessmentRead,
    RunAssessed,
)
from contreact_events.exceptions import CorruptEvent, NewerSchemaVersion, UnknownEventType
from contreact_events.history.evaluation import verify_assessment
from contreact_events.wire.codec import (
    assessment_from_fields,
    assessment_from_json,
    assessment_to_fields,
    assessment_to_json,
    event_from_json,
)
from contreact_events.wire.schema import SCHEMA_DIR

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SAVED = sorted(FIXTURES.glob("assessments-v*.jsonl"))


def saved() -> list[RunAssessed | AssessmentFailed | AssessmentRead]:
    return [
        assessment_from_json(line, where=f"{path.name}:{n}")
        for path in SAVED
        for n, line in enumerate(path.read_bytes().splitlines(), 1)
    ]


def test_assessment_events_are_a_union_of_their_own_not_run_log_events() -> None:
    assert set(ASSESSMENT_EVENT_CLASSES) == {"RunAssessed", "AssessmentFailed", "AssessmentRead"}
    assert not set(ASSESSMENT_EVENT_CLASSES) & set(EVENT_CLASSES)
    assert ASSESSMENT_SCHEMA_VERSIONS == {
        "RunAssessed": 3,
        "AssessmentFailed": 3,
        "AssessmentRead": 1,
    }
    line = (FIXTURES / "assessments-v1.jsonl").read_bytes().splitlines()[0]
    with pytest.raises(UnknownEventType, match="unknown event type 'RunAssessed'"):
        event_from_json(line)  # the run log's codec refuses them


def test_every_assessment_event_round_trips_through_json_and_stream_fields() -> None:
    events = saved()
    assert {e.type for e in events} == set(ASSESSMENT_EVENT_CLASSES)
    for event in events:
        assert assessment_from_json(assessment_to_json(event)) == event
        fields = assessment_to_fields(event)
        assert fields["type"] == event.type
        stored = {k.encode(): v.encode() if isinstance(v, str) else v for k, v in fields.items()}
        assert assessment_from_fields(stored) == event


def test_a_newer_or_broken_assessment_record_is_refused_clearly() -> None:
    data = orjson.loads((FIXTURES / "assessments-v1.jsonl").read_bytes().splitlines()[0])
    with pytest.raises(NewerSchemaVersion, match="schema version 4, but this code reads up to"):
        assessment_from_json(orjson.dumps({**data, "schema_version": 4}))
    with pytest.raises(CorruptEvent, match="repeat: Input should be greater than or equal to 1"):
        assessment_from_json(orjson.dumps({**data, "repeat": 0}))
    with pytest.raises(CorruptEvent, match="run_events: Input should be greater than or equal"):
        assessment_from_json(orjson.dumps({**data, "run_events": 0}))  # a rating rated something
    failed = orjson.loads((FIXTURES / "assessments-v1.jsonl").read_bytes().splitlines()[-1])
    assert failed["type"] == "AssessmentFailed"
    unbuilt = {**failed, "run_events": 0, "input_sha256": "", "run_digest": ""}
    assert assessment_from_json(orjson.dumps(unbuilt)).run_events == 0  # its input never built
    with pytest.raises(CorruptEvent, match="status"):
        assessment_from_json(orjson.dumps({**data, "status": "guessed"}))
    with pytest.raises(CorruptEvent, match="not valid JSON"):
        assessment_from_json(b"{")
    with pytest.raises(CorruptEvent, match="no 'event' field"):
        assessment_from_fields({"type": "RunAssessed"})


def test_saved_assessments_still_verify_against_the_run_log_they_rated() -> None:
    """The evaluator input of a recorded assessment is rebuilt from the saved log: a
    change in how the history is rebuilt, or in the prompt hash, breaks this."""
    log = [
        event_from_json(line)
        for line in (FIXTURES / "runlog-v4-argument-cut.jsonl").read_bytes().splitlines()
    ]
    records = saved()
    assert records and all(r.run_id == log[0].run_id for r in records)
    for record in records:
        if not isinstance(record, AssessmentRead):  # (a reading pins no input of its own)
            assert verify_assessment(log, record) is None
    rated = [r for r in records if isinstance(r, RunAssessed)]
    assert [(r.instrument, r.status, r.value, r.label, r.read_by) for r in rated] == [
        ("pei", "rated", 3, None, "parser"),  # the first records: read by the parser
        ("patterns", "rated", None, "systematic_production", "parser"),
        ("pei", "rated", 3, None, "follow_up"),
        ("pei", "unparseable", None, None, "parser"),
    ]


def test_saved_records_keep_the_follow_up_the_retry_and_a_persons_reading() -> None:
    """The records of the follow-up, of a transient failure asked again and of a
    person's reading, as saved: each still decodes with what it held."""
    path = FIXTURES / "assessments-v2-readings.jsonl"
    follow, failed, retry, reading = (
        assessment_from_json(line) for line in path.read_bytes().splitlines()
    )
    assert isinstance(follow, RunAssessed) and follow.follow_up is not None
    assert follow.follow_up.raw_answer == '{"level": 3, "refused": false}'
    assert follow.raw_thinking and follow.evaluator_model_digest and follow.options["seed"] == 44
    assert isinstance(failed, AssessmentFailed) and failed.transient
    assert isinstance(retry, RunAssessed) and retry.retry_of == failed.event_id
    assert isinstance(reading, AssessmentRead) and reading.record_id == retry.event_id
    assert (reading.value, reading.by) == (2, "A. Reader")


def test_the_committed_assessment_schema_names_their_versions() -> None:
    schema = json.loads((SCHEMA_DIR / "assessment-events.schema.json").read_text())
    assert schema["x-schema-versions"] == ASSESSMENT_SCHEMA_VERSIONS
    assert set(schema["discriminator"]["mapping"]) == set(ASSESSMENT_EVENT_CLASSES)
