"""Assessments in the dashboard: where the pages read them, and their JSON contracts.

The records are read per request by the one reader the CLI and the analysis share
(``contreact_bus.assessments.read_assessments``): the run's archived records, then those
only Redis holds yet. The pages are served from worker threads; the reader's coroutine
runs on the app's event loop (``anyio.from_thread.run``), with one Redis client per app.
When Redis does not answer, the archive alone is read and the page says so.

A rated run's row (its group) and replica are its place in its experiment
(``views.places``, the rule ``contreact assess matrix`` and the report use: a replica
under its label, a fork as ``A -> B at K``). The matrix of a set of records is
computed once and kept (``MATRIX_CACHE`` of them): the compare page is re-rendered on
every change of a live run, the statistics only change with the records.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import anyio.from_thread
import redis.asyncio as aioredis
from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict

from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_bus.assessments import read_assessments
from contreact_events.catalog.assessment import AssessmentEvent
from contreact_ui.settings import UISettings

__all__ = [
    "RAW_LIMIT",
    "AssessmentReader",
    "AssessmentRow",
    "Assessments",
    "RatingsPage",
    "Table2Live",
]

RAW_LIMIT = 4000
"""Characters of a raw answer a page shows (the rest is counted; the export has it all)."""
MAX_ROWS = 1000
MATRIX_CACHE = 16
REDIS_TIMEOUT_S = 2.0


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AssessmentRow(_Model):
    """One assessment record as a page shows it."""

    run_id: str
    history: str
    """The rated run's model label (Table 2's row)."""
    replica: str
    evaluator: str
    """The evaluator's label (Table 2's column): its model's label in the experiment."""
    evaluator_model: str
    instrument: str
    repeat: int
    status: str
    """rated, unparseable, refused, off_scale, or failed (no answer came back)."""
    value: float | None
    label: str | None
    reason: str | None
    note: str
    raw: str
    """The raw answer (or the failure), its first ``RAW_LIMIT`` characters: untrusted text."""
    raw_chars: int
    raw_truncated: bool
    ts: datetime | None
    event_id: str
    read_by: str | None = None
    """Who read the rating: parser, follow_up (the evaluator's answer to the follow-up
    question) or person; None for a failed rating."""
    reader: str | None = None
    """The person who read it, when ``read_by`` is person (untrusted text)."""
    read_at: datetime | None = None


class Table2Live(_Model):
    """Table 2 of the runs a compare page shows, from their assessment records."""

    runs: int
    records: int
    matrix: AssessmentMatrix | None
    """None when none of the runs has a record."""
    ratings_query: str
    """The query of the compare page's selection, for the links to the ratings."""
    note: str | None
    """Why the table may be incomplete (Redis not answering: the archive alone)."""


class RatingsPage(_Model):
    experiment: str | None
    runs: list[str]
    models: list[str]
    history: str | None
    evaluator: str | None
    instrument: str | None
    status: str | None
    rows: list[AssessmentRow]
    total: int
    """Records that match (``rows`` holds the first ``MAX_ROWS``)."""
    counts: dict[str, int]
    """Matching records by status."""
    note: str | None


@dataclass
class AssessmentReader:
    """Reads a page's records (one per app, in ``app.state``)."""

    settings: UISettings
    _redis: aioredis.Redis | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _matrices: OrderedDict[tuple[Any, ...], AssessmentMatrix] = field(default_factory=OrderedDict)

    @property
    def archive_dir(self) -> Path:
        return self.settings.archive_dir

    def records(
        self, run_ids: Sequence[str]
    ) -> tuple[dict[str, list[AssessmentEvent]], str | None]:
        """Every record of each run, and a note when Redis did not answer."""
        if not run_ids:
            return {}, None
        return anyio.from_thread.run(self._read, list(run_ids))

    async def _read(
        self, run_ids: list[str]
    ) -> tuple[dict[str, list[AssessmentEvent]], str | None]:
        if self._redis is None:
            self._redis = aioredis.from_url(
                self.settings.redis_url,
                socket_connect_timeout=REDIS_TIMEOUT_S,
                socket_timeout=REDIS_TIMEOUT_S,
            )
        skipped: dict[str, str] = {}
        try:
            records = await read_assessments(self._redis, self.archive_dir, run_ids, skipped)
            note = None
        except (OSError, aioredis.RedisError):
            skipped.clear()
            records = await read_assessments(None, self.archive_dir, run_ids, skipped)
            note = "Redis does not answer: these are the archived records alone"
        if skipped:  # one bad line leaves out that line, named, never the page
            shown = sorted(skipped.items())[:5]
            lines = "; ".join(f"{where} ({why[:200]})" for where, why in shown)
            more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
            left_out = f"{len(skipped)} unreadable archive line(s) left out: {lines}{more}"
            note = f"{note}. {left_out}" if note else left_out
        return records, note

    def matrix(self, key: tuple[Any, ...], build: Any) -> AssessmentMatrix:
        """The matrix of ``key`` (what it was computed from), computed by ``build()``
        the first time."""
        with self._lock:
            found = self._matrices.get(key)
            if found is not None:
                self._matrices.move_to_end(key)
                return found
        made: AssessmentMatrix = build()
        with self._lock:
            self._matrices[key] = made
            while len(self._matrices) > MATRIX_CACHE:
                self._matrices.popitem(last=False)
        return made


_CREATING = threading.Lock()


def assessment_reader(request: Request) -> AssessmentReader:
    state = request.app.state
    with _CREATING:
        reader: AssessmentReader | None = getattr(state, "assessment_reader", None)
        if reader is None:
            reader = state.assessment_reader = AssessmentReader(state.settings)
    return reader


Assessments = Annotated[AssessmentReader, Depends(assessment_reader)]
