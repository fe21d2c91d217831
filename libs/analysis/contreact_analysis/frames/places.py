"""A run's place as the runs table's columns: what its row says of its place
(``run_facts``), the columns of its place (``place_columns``: label, replica, kind,
attempt) and a run id's label and replica letter alone (``label_and_replica``), all by
``contreact_events.config.run_places``. Pure: no I/O."""

from __future__ import annotations

from typing import Any

from contreact_events.config.run_places import RunFacts, RunPlace, run_places

Row = dict[str, Any]


def run_facts(run: Row) -> RunFacts:
    """What a run's row says of its place (its experiment, model, parent and K)."""
    return RunFacts(
        run_id=run["run_id"],
        experiment=run["experiment"] or "",
        model=run["model"],
        ran=run["resolved_model"] or "",
        parent_run_id=run["parent_run_id"] or "",
        at_cycle=run["at_cycle"] or 0,
    )


def place_columns(place: RunPlace) -> Row:
    """The runs table's columns of a run's place: label (Table 1's group), replica
    (a fork: its parent's letter; a run of no experiment's replicas: none), kind."""
    replica = place.letter if place.kind in ("replica", "fork") else None
    return {
        "label": place.group,
        "replica": replica,
        "kind": place.kind,
        "attempt": place.attempt,
    }


def label_and_replica(run_id: str, model: str, experiment: str) -> tuple[str, str]:
    """A run's label and replica letter as its place alone says them (``run_places``):
    an experiment's replica ``{experiment}-{label}-{letter}[.attempt]``; the model name
    and "" for a run not named so."""
    place = run_places([RunFacts(run_id, experiment, model)])[run_id]
    return place.group, place.letter if place.kind == "replica" else ""
