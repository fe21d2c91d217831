"""Assessments in the dashboard: where the pages read them (their JSON contracts are in
``models/assessments.py``).

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
from pathlib import Path
from typing import Annotated, Any

import anyio.from_thread
import redis.asyncio as aioredis
from fastapi import Depends, Request

from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_bus.assessments import read_assessments
from contreact_bus.failover.address import redis_client
from contreact_bus.queries import read_queries
from contreact_events.catalog.assessment import AssessmentEvent
from contreact_events.catalog.query import RunQueried
from contreact_events.exceptions import CorruptEvent
from contreact_ui.settings import UISettings

__all__ = ["MAX_ROWS", "AssessmentReader", "Assessments"]

MAX_ROWS = 1000
MATRIX_CACHE = 16
REDIS_TIMEOUT_S = 2.0


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
            self._redis = redis_client(
                self.settings.redis,
                asyncio=True,
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

    def queries(self, run_id: str) -> tuple[list[RunQueried], str | None]:
        """The run's query records (``contreact query``), and a note when Redis did not
        answer (the archived records alone then)."""
        return anyio.from_thread.run(self._queries, run_id)

    async def _queries(self, run_id: str) -> tuple[list[RunQueried], str | None]:
        if self._redis is None:
            self._redis = redis_client(
                self.settings.redis,
                asyncio=True,
                socket_connect_timeout=REDIS_TIMEOUT_S,
                socket_timeout=REDIS_TIMEOUT_S,
            )
        try:
            return (await read_queries(self._redis, self.archive_dir, [run_id]))[run_id], None
        except (OSError, aioredis.RedisError):
            found = (await read_queries(None, self.archive_dir, [run_id]))[run_id]
            return found, "Redis does not answer: these are the archived queries alone"
        except CorruptEvent as exc:
            return [], f"the run's queries cannot be read: {str(exc)[:300]}"

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
