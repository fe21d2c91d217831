"""A fork's lineage: its parent, the cycle it forked after, what changed, and the two
runs side by side cycle by cycle from the next one; a run's own forks. Read from the
projections (the forks' ``RunForked`` events and both runs' cycle rows); its JSON
contract is ``models/lineage.py``."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from contreact_ui.models import ForkLink, ForkOrigin, SettingChange
from contreact_ui.models.lineage import CycleComparison, CycleSide, LineagePage
from contreact_ui.views.runs import run_row

COMPARED = ("reflection_chars", "tool_calls", "memory_ops_total", "llm_calls", "tool_errors")
"""The per-cycle figures set side by side."""


def lineage_page(conn: sqlite3.Connection, run_id: str) -> LineagePage:
    run_row(conn, run_id)  # a run the dashboard does not know: the usual 404
    forks = forks_of(conn, run_id)
    forked = _forked(conn, run_id)
    if forked is None:
        return LineagePage(
            run_id=run_id,
            parent_run_id=None,
            at_cycle=None,
            parent_digest=None,
            parent_shown=False,
            changes=[],
            cycles=[],
            forks=forks,
        )
    origin = _origin(conn, forked)
    fork_cycles = _cycles(conn, run_id, origin.at_cycle)
    parent_cycles = _cycles(conn, origin.parent_run_id, origin.at_cycle)
    numbers = sorted(fork_cycles.keys() | parent_cycles.keys())
    return LineagePage(
        run_id=run_id,
        parent_run_id=origin.parent_run_id,
        at_cycle=origin.at_cycle,
        parent_digest=str(forked["parent_digest"]),
        parent_shown=origin.parent_shown,
        changes=origin.changes,
        cycles=[
            CycleComparison(cycle=n, fork=fork_cycles.get(n), parent=parent_cycles.get(n))
            for n in numbers
        ],
        forks=forks,
    )


def fork_origin(conn: sqlite3.Connection, run_id: str) -> ForkOrigin | None:
    """The run's parent, the cycle it forked after and what changed; None: no fork."""
    forked = _forked(conn, run_id)
    return None if forked is None else _origin(conn, forked)


def forks_of(conn: sqlite3.Connection, run_id: str) -> list[ForkLink]:
    """The runs forked from ``run_id``, by their own ``RunForked`` (a fork of a fork
    holds its parent's copied one too: only a run's last one is its own), in the
    order they forked."""
    own: dict[str, tuple[int, dict[str, Any]]] = {}
    for child, seq, payload in conn.execute(
        "SELECT run_id, seq, payload FROM events INDEXED BY events_forked WHERE type = 'RunForked'"
    ):
        if child not in own or seq > own[child][0]:
            own[child] = (seq, orjson.loads(bytes(payload)))
    children = sorted(
        (forked["ts"], child, forked)
        for child, (_, forked) in own.items()
        if forked["parent_run_id"] == run_id
    )
    statuses = dict(
        conn.execute(
            f"SELECT run_id, status FROM runs WHERE run_id IN ({', '.join('?' * len(children))})",
            [child for _, child, _ in children],
        ).fetchall()
    )
    return [
        ForkLink(
            run_id=child,
            at_cycle=int(forked["at_cycle"]),
            status=str(statuses.get(child, "unknown")),
            changes=_changes(forked),
        )
        for _, child, forked in children
    ]


def _forked(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    found = conn.execute(  # every run page asks: the partial index, not the run's log
        "SELECT payload FROM events INDEXED BY events_forked "
        "WHERE run_id = ? AND type = 'RunForked' ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return None if found is None else dict(orjson.loads(bytes(found[0])))


def _origin(conn: sqlite3.Connection, forked: dict[str, Any]) -> ForkOrigin:
    parent = str(forked["parent_run_id"])
    shown = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (parent,)).fetchone()
    return ForkOrigin(
        parent_run_id=parent,
        at_cycle=int(forked["at_cycle"]),
        parent_shown=shown is not None,
        changes=_changes(forked),
        question=str(forked.get("question") or ""),
    )


def _changes(forked: dict[str, Any]) -> list[SettingChange]:
    out: list[SettingChange] = []
    for key, pair in dict(forked.get("changes") or {}).items():
        words = _description_changes(pair) if key == "tools.added" else None
        out.extend(words or [SettingChange(key=key, parent=pair[0], fork=pair[1])])
    return out


def _description_changes(pair: Any) -> list[SettingChange] | None:
    """A framing-only fork (``--set tools.NAME.description=...``): the tools added as
    data are the same but for descriptions, shown one per tool, the parent's words
    beside the fork's. None when anything else about the tools changed."""
    before, after = pair
    if not isinstance(before, list) or not isinstance(after, list) or len(before) != len(after):
        return None
    changes = []
    for mine, theirs in zip(before, after, strict=True):
        if not isinstance(mine, dict) or not isinstance(theirs, dict):
            return None
        if {**mine, "description": None} != {**theirs, "description": None}:
            return None
        if mine.get("description") != theirs.get("description"):
            key = f"tools.{mine.get('name')}.description"
            changes.append(
                SettingChange(key=key, parent=mine["description"], fork=theirs["description"])
            )
    return changes or None


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
