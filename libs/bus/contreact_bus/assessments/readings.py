"""The ratings in force: what the matrix, the dashboard, the status and the exports count.

A run's assessment stream only grows. Two kinds of later record change what an earlier
one counts as, without touching it:

- a rating asked again after a transient failure (same instrument, evaluator and
  repeat; ``retry_of`` names the failure): the answer replaces the failure, which is
  then no answer missing;
- a person's reading (``AssessmentRead``) of a rating: the latest one of a rating is
  the level (or label) in force, shown with who read it and when (``read_by:
  person``, ``reading``).

Pure: the records in, views of them out (copies with the reading applied; the stored
records are never changed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contreact_events.catalog.assessment import (
    AssessmentEvent,
    AssessmentFailed,
    AssessmentRead,
    PersonReading,
    RunAssessed,
)

Rating = RunAssessed | AssessmentFailed


@dataclass(frozen=True)
class RatingKey:
    """What one rating of a run is: the instrument, the evaluator model, the repeat."""

    instrument: str
    evaluator: str
    repeat: int

    @property
    def field(self) -> str:
        return index_field(self.instrument, self.evaluator, self.repeat)

    @classmethod
    def of(cls, record: AssessmentEvent) -> RatingKey:
        return cls(record.instrument, record.evaluator, record.repeat)


def index_field(instrument: str, evaluator: str, repeat: int) -> str:
    return f"{instrument}\n{evaluator}\n{repeat}"


def _rank(record: Rating) -> tuple[int, object]:
    """An answer before a failure; then the later record."""
    return (1 if isinstance(record, RunAssessed) else 0, record.ts)


def in_force(records: Iterable[AssessmentEvent]) -> list[Rating]:
    """One rating per (run, instrument, evaluator, repeat), in the order recorded: an answer
    over a failure, else the later record; each with its latest person's reading
    applied. Readings themselves are not ratings and are left out."""
    chosen: dict[tuple[str, RatingKey], tuple[int, Rating]] = {}
    readings: dict[str, AssessmentRead] = {}
    for position, record in enumerate(records):
        if isinstance(record, AssessmentRead):
            held = readings.get(record.record_id)
            if held is None or record.ts >= held.ts:
                readings[record.record_id] = record
            continue
        key = (record.run_id, RatingKey.of(record))
        found = chosen.get(key)
        if found is None or _rank(record) >= _rank(found[1]):
            chosen[key] = (position, record)
    out: list[Rating] = []
    for _position, record in sorted(chosen.values(), key=lambda item: item[0]):
        reading = readings.get(record.event_id)
        out.append(read_by_person(record, reading) if reading is not None else record)
    return out


def read_by_person(record: Rating, reading: AssessmentRead) -> Rating:
    """``record`` as ``reading`` reads it (a failed rating has no answer to read)."""
    if not isinstance(record, RunAssessed):
        return record
    return record.model_copy(
        update={
            "status": "rated",
            "value": reading.value,
            "label": reading.label,
            "read_by": "person",
            "reading": PersonReading(
                by=reading.by, at=reading.ts, note=reading.note, record_id=reading.event_id
            ),
        }
    )


def by_key(records: Iterable[AssessmentEvent]) -> Mapping[RatingKey, Rating]:
    """The ratings in force of one run by what they rate."""
    return {RatingKey.of(record): record for record in in_force(records)}
