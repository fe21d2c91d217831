"""Where the dashboard's runs stand in their experiments: the one rule of
``contreact_events.config.run_places`` (what the CLI's ``assess matrix``, ``analyze``
and the report use) over the store's runs (their config's experiment and model) and
their logs' last ``RunForked`` (a fork's parent and K).

Which runs a table counts: an experiment's (or a models') selection by ``select``
(each replica's current attempt, the forks as asked, no fork made outside the
experiment's file); runs picked by id as they are, forks as asked."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from contreact_events.config.run_places import (
    ForkView,
    RunFacts,
    RunPlace,
    Selection,
    run_places,
    select,
)


def fork_origins(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Each fork's parent and K (its log's last ``RunForked``: a fork of a fork also
    holds its parent's, copied)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    out: dict[str, tuple[str, int]] = {}
    for run_id, payload in conn.execute(
        f"SELECT run_id, payload FROM events WHERE type = 'RunForked' AND run_id IN ({marks}) "
        "ORDER BY run_id, seq",
        list(run_ids),
    ):
        forked = orjson.loads(bytes(payload))
        out[run_id] = (str(forked["parent_run_id"]), int(forked["at_cycle"]))
    return out


def places_of(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, RunPlace]:
    """The places of the runs named (in that order; runs the store lacks left out)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    rows = {
        r[0]: r
        for r in conn.execute(
            f"SELECT run_id, model, resolved_model, experiment FROM runs WHERE run_id IN ({marks})",
            list(run_ids),
        )
    }
    forks = fork_origins(conn, list(rows))
    facts = []
    for run_id in dict.fromkeys(run_ids):
        if run_id in rows:
            _, model, ran, experiment = rows[run_id]
            parent, at_cycle = forks.get(run_id, ("", 0))
            facts.append(RunFacts(run_id, experiment, model, ran, parent, at_cycle))
    return run_places(facts)


def experiment_places(conn: sqlite3.Connection, experiment: str) -> dict[str, RunPlace]:
    """Every run of ``experiment`` the store holds, placed."""
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT run_id FROM runs WHERE experiment = ? ORDER BY run_id", (experiment,)
        )
    ]
    return places_of(conn, ids)


def picked(places: Sequence[RunPlace], forks: ForkView) -> Selection:
    """Runs picked by id: every one, the forks as ``forks`` says."""
    keep = [
        p for p in places if forks == "as-rows" or (p.is_fork if forks == "only" else not p.is_fork)
    ]
    left = tuple(p.run_id for p in places if p not in keep)
    return Selection(tuple(keep), forks=left)


def counted(places: Sequence[RunPlace], forks: ForkView, *, by_id: bool) -> Selection:
    """What a table counts: runs picked by id (``picked``), else an experiment's or a
    model's runs (``select``)."""
    return picked(places, forks) if by_id else select(places, forks)
