"""A fork's lineage: its parent, the cycle it forked after, what changed, and the two
runs side by side cycle by cycle from the next one. Read from the projections (the
fork's ``RunForked`` event and both runs' cycle rows); the page and its JSON contract
are declared here."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from contreact_ui.views.runs import run_row

COMPARED = ("reflection_chars", "tool_calls", "memory_ops_total", "llm_calls", "tool_errors")
"""The per-cycle figures set side by side."""


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SettingChange(_Row):
    key: str
    """A dotted setting path (``model_name``, ``diversity.moderate_threshold``)."""
    parent: Any
    fork: Any


class CycleSide(_Row):
    """One run's cycle: its figures, similarity and reflection (None: no such cycle)."""

    figures: dict[str, float]
    max_similarity: float | None
    level: str | None
    reflection: str | None


class CycleComparison(_Row):
    cycle: int
    fork: CycleSide | None
    parent: CycleSide | None


class LineagePage(_Row):
    """``/runs/{run_id}/lineage``: where a fork comes from and how it went on."""

    run_id: str
    parent_run_id: str | None
    """None: the run is not a fork (the other fields are then empty)."""
    at_cycle: int | None
    """The parent's cycle whose end the fork starts after."""
    parent_digest: str | None
    """The parent's state digest at the end of that cycle."""
    parent_shown: bool
    """False when the dashboard does not hold the parent (its cycles are then empty)."""
    changes: list[SettingChange]
    cycles: list[CycleComparison]
    """From ``at_cycle + 1`` on, as far as either run got."""


def lineage_page(conn: sqlite3.Connection, run_id: str) -> LineagePage:
    run_row(conn, run_id)  # a run the dashboard does not know: the usual 404
    found = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND type = 'RunForked' "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if found is None:
        return LineagePage(
            run_id=run_id,
            parent_run_id=None,
            at_cycle=None,
            parent_digest=None,
            parent_shown=False,
            changes=[],
            cycles=[],
        )
    forked = orjson.loads(bytes(found[0]))
    parent, at_cycle = str(forked["parent_run_id"]), int(forked["at_cycle"])
    fork_cycles = _cycles(conn, run_id, at_cycle)
    parent_cycles = _cycles(conn, parent, at_cycle)
    shown = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (parent,)).fetchone()
    numbers = sorted(fork_cycles.keys() | parent_cycles.keys())
    return LineagePage(
        run_id=run_id,
        parent_run_id=parent,
        at_cycle=at_cycle,
        parent_digest=str(forked["parent_digest"]),
        parent_shown=shown is not None,
        changes=[
            SettingChange(key=key, parent=pair[0], fork=pair[1])
            for key, pair in dict(forked.get("changes") or {}).items()
        ],
        cycles=[
            CycleComparison(cycle=n, fork=fork_cycles.get(n), parent=parent_cycles.get(n))
            for n in numbers
        ],
    )


def _cycles(conn: sqlite3.Connection, run_id: str, after: int) -> dict[int, CycleSide]:
    rows = conn.execute(
        f"SELECT cycle, max_similarity, level, reflection, {', '.join(COMPARED)} FROM cycles "
        "WHERE run_id = ? AND cycle > ? ORDER BY cycle",
        (run_id, after),
    ).fetchall()
    return {
        int(row["cycle"]): CycleSide(
            figures={name: float(row[name]) for name in COMPARED},
            max_similarity=row["max_similarity"],
            level=row["level"],
            reflection=row["reflection"],
        )
        for row in rows
    }
