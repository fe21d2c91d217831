"""An experiment's runs as a table: each replica's current run, folded from its log as
it grows (one pipelined read for every run still going), or from its archive.

``rows`` is what ``experiment status --json`` prints and what the live table and the
summary show, so the three never disagree.

On a terminal the table is redrawn in place; otherwise one line is printed per change
of a run's status or cycle.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import read_archive
from contreact_bus.experiments import ReplicaEntry
from contreact_bus.replies import entries
from contreact_cli.output import Printer
from contreact_cli.runs.records import UNREADABLE
from contreact_cli.text import safe
from contreact_events.catalog import TERMINAL_TYPES, Event
from contreact_events.config.spend import COST_UNIT, cost_text
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.history.run_summary import run_summary
from contreact_events.names import run_log_key
from contreact_events.wire.codec import bulk, event_from_fields

PAGE = 1000


@dataclass
class RunView:
    """One replica's current run as far as it has been read."""

    entry: ReplicaEntry
    state: AgentState | None = None
    last_id: bytes = b"0-0"
    advisory: str = ""
    started_at: float | None = None
    ended_at: float | None = None
    unreadable: str | None = None
    """Why the run's log cannot be read, once it could not: the row says so and the
    other replicas go on."""

    @property
    def ended(self) -> bool:
        return self.unreadable is not None or (self.state is not None and self.state.terminal)

    def take(self, events: Sequence[Event]) -> None:
        if not events:
            return
        with bulk():
            self.state = fold_all(list(events), self.state)
        for event in events:
            if event.type == "RunRequested" and self.started_at is None:
                self.started_at = event.ts.timestamp()
            elif event.type == "SimilarityAssessed" and event.max_similarity is not None:
                self.advisory = (
                    f"{event.level} {event.max_similarity:.2f} (c{event.most_similar_cycle})"
                )
            elif event.type in TERMINAL_TYPES:
                self.ended_at = event.ts.timestamp()

    def row(self) -> dict[str, Any]:
        """The replica's row: its entry, the run's ``run_summary``, and what only the
        events tell (the last advisory, the wall time)."""
        entry = self.entry
        run = run_summary(self.state) if self.state is not None else None
        status = run.status if run else "submitted"
        if self.unreadable is not None:
            status = "unreadable"
        return {
            "replica": entry.replica,
            "label": entry.label,
            "condition": (
                self.state.config.condition
                if self.state is not None and self.state.config is not None
                else None
            ),
            "letter": entry.letter,
            "model": entry.model,
            "run_id": entry.run_id,
            "attempt": entry.attempt,
            "status": status,
            "cycle": run.cycle if run else 0,
            "cycle_count": run.cycle_count if run else 0,
            "step": run.step if run else 0,
            "tokens": run.tokens if run else 0,
            "cost": round(run.cost, 6) if run else 0.0,
            "uncosted_calls": run.uncosted_calls if run else 0,
            "llm_seconds": round(run.llm_seconds, 3) if run else 0,
            "advisory": self.advisory,
            "backend": run.backend if run else "",
            "host": run.host if run else "",
            "resolved_model": run.resolved_model if run else "",
            "failure_reason": self.unreadable or (run.failure_reason if run else ""),
            "requested_at": self.started_at,
            "wall_seconds": (
                round(self.ended_at - self.started_at, 3)
                if self.started_at is not None and self.ended_at is not None
                else None
            ),
        }


@dataclass
class ExperimentProgress:
    """Every replica's current run, kept up to date by ``poll``."""

    runs: list[RunView]
    archive_dir: Path
    _checked_archive: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, replicas: Sequence[ReplicaEntry], archive_dir: Path) -> ExperimentProgress:
        ordered = sorted(replicas, key=lambda e: (e.label, len(e.letter), e.letter))
        return cls([RunView(entry) for entry in ordered], archive_dir)

    @property
    def done(self) -> bool:
        return all(view.ended for view in self.runs)

    def rows(self) -> list[dict[str, Any]]:
        return [view.row() for view in self.runs]

    async def poll(self, redis: aioredis.Redis) -> bool:
        """Read what every unfinished run appended since the last poll, in one round
        trip; a run Redis no longer holds is read from its archive. True if anything
        changed."""
        going = [view for view in self.runs if not view.ended]
        if not going:
            return False
        async with redis.pipeline(transaction=False) as pipe:
            for view in going:
                pipe.xrange(run_log_key(view.entry.run_id), b"(" + view.last_id, "+", PAGE)
            pages = await pipe.execute()
        changed = False
        for view, page in zip(going, pages, strict=True):
            try:
                changed |= await self._take(view, entries(page))
            except UNREADABLE as exc:  # one unreadable replica; the others go on
                view.unreadable = str(exc) or type(exc).__name__
                changed = True
        return changed

    async def _take(self, view: RunView, read: list[tuple[bytes, dict[bytes, bytes]]]) -> bool:
        if not read and view.state is None:
            return await self._from_archive(view)
        if not read:
            return False
        key = run_log_key(view.entry.run_id)
        with bulk():
            events = [
                event_from_fields(fields, where=f"{key} entry {entry_id.decode()}")
                for entry_id, fields in read
            ]
        view.take(events)
        view.last_id = read[-1][0]
        return True

    async def _from_archive(self, view: RunView) -> bool:
        run_id = view.entry.run_id
        if run_id in self._checked_archive:
            return False
        self._checked_archive.add(run_id)
        events = await asyncio.to_thread(read_archive, self.archive_dir, run_id)
        if not events:
            self._checked_archive.discard(run_id)  # not requested yet: look again later
            return False
        view.take(events)
        return True


COLUMNS = (
    ("model", 18),
    ("rep", 3),
    ("status", 16),
    ("cycle", 7),
    ("step", 4),
    ("tokens", 9),
    ("cost", 10),
    ("advisory", 18),
    ("host", 22),
    ("run", 0),
)


def host_cell(host: str) -> str:
    """The host of the run's last call, without the scheme (``gpu1:11434``), or ``-``."""
    return safe(host.split("://", 1)[-1], 22, one_line=True) if host else "-"


def table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The table's lines: model, replica, status, cycle, step, tokens, cost, last advisory,
    the host of the last call (a pool may move a run), the run.
    A replica whose model was not the one configured (``auto`` fell back) says so."""
    lines = ["  ".join(f"{name.upper():<{width}}" for name, width in COLUMNS).rstrip()]
    for row in rows:
        model = safe(row["label"], 18, one_line=True)
        status = row["status"]
        if row["resolved_model"] and row["resolved_model"] != row["model"]:
            status = f"{status}!model"
        cells = (
            model,
            row["letter"],
            status,
            f"{row['cycle']}/{row['cycle_count']}",
            str(row["step"]),
            f"{row['tokens']:,}",
            cost_text(row["cost"], row["uncosted_calls"]),
            row["advisory"] or "-",
            host_cell(row.get("host", "")),
            row["run_id"]
            + (f" ({safe(row['backend'], 40, one_line=True)})" if row["backend"] else ""),
        )
        lines.append(
            "  ".join(f"{cell:<{width}}" for cell, (_n, width) in zip(cells, COLUMNS, strict=True))
        )
    return lines


def spend_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The spend per model and the experiment's, in ``COST_UNIT``."""
    lines = []
    for label in sorted({row["label"] for row in rows}):
        mine = [row for row in rows if row["label"] == label]
        cost = sum(row["cost"] for row in mine)
        unknown = sum(row["uncosted_calls"] for row in mine)
        tokens = sum(row["tokens"] for row in mine)
        lines.append(
            f"spend {safe(label, 18, one_line=True)}: {cost_text(cost, unknown)} {COST_UNIT}, "
            f"{tokens:,} tokens" + (f" ({unknown} call(s) of unknown cost)" if unknown else "")
        )
    cost = sum(row["cost"] for row in rows)
    unknown = sum(row["uncosted_calls"] for row in rows)
    tokens = sum(row["tokens"] for row in rows)
    lines.append(f"spend in all: {cost_text(cost, unknown)} {COST_UNIT}, {tokens:,} tokens")
    return lines


def summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per model: runs by status, mean cycles, tokens and LLM time, wall time; then the
    spend per model and in all; then what went wrong."""
    lines = [
        f"{'MODEL':<18}  {'RUNS':>4}  {'DONE':>4}  {'FAILED':>6}  {'CYCLES':>6}  "
        f"{'TOKENS/RUN':>10}  {'LLM S/RUN':>9}  {'WALL S':>7}"
    ]
    labels = sorted({row["label"] for row in rows})
    for label in labels:
        mine = [row for row in rows if row["label"] == label]
        done = sum(row["status"] == "completed" for row in mine)
        failed = sum(row["status"] in ("failed", "cancelled", "quarantined") for row in mine)
        walls = [row["wall_seconds"] for row in mine if row["wall_seconds"] is not None]
        lines.append(
            f"{safe(label, 18, one_line=True):<18}  {len(mine):>4}  {done:>4}  {failed:>6}  "
            f"{statistics.fmean(row['cycle'] for row in mine):>6.1f}  "
            f"{statistics.fmean(row['tokens'] for row in mine):>10,.0f}  "
            f"{statistics.fmean(row['llm_seconds'] for row in mine):>9.1f}  "
            f"{max(walls) if walls else 0:>7.1f}"
        )
    if rows:
        lines += spend_lines(rows)
    for row in rows:
        if row["resolved_model"] and row["resolved_model"] != row["model"]:
            lines.append(
                f"WARNING: {row['run_id']} ran {safe(row['resolved_model'], 60, one_line=True)} on "
                f"{safe(row['backend'], 40, one_line=True)}, not the configured "
                f"{safe(row['model'], 60, one_line=True)}"
            )
        if row["status"] in ("failed", "cancelled", "quarantined", "stopped"):
            reason = safe(row["failure_reason"], 160, one_line=True) or row["status"]
            lines.append(f"{row['run_id']} {row['status']}: {reason}")
    return lines


class LiveTable:
    """Redraws the table in place on a terminal; elsewhere prints one line per change
    of a run's status or cycle, so a log stays readable."""

    def __init__(self, out: Printer, *, interactive: bool | None = None) -> None:
        self._out = out
        self._interactive = sys.stdout.isatty() if interactive is None else interactive
        self._drawn = 0
        self._seen: dict[str, tuple[str, int]] = {}

    def show(self, rows: Sequence[dict[str, Any]]) -> None:
        if self._interactive:
            lines = table(rows)
            if self._drawn:
                sys.stdout.write(f"\x1b[{self._drawn}F\x1b[J")
            for line in lines:
                self._out(line)
            self._drawn = len(lines)
            return
        for row in rows:
            now = (row["status"], row["cycle"])
            if self._seen.get(row["run_id"]) != now:
                self._seen[row["run_id"]] = now
                self._out(
                    f"{row['run_id']}: {row['status']}, cycle {row['cycle']}/"
                    f"{row['cycle_count']}, {row['tokens']:,} tokens"
                    + (f", advisory {row['advisory']}" if row["advisory"] else "")
                )
