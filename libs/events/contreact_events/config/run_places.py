"""Where a run stands in its experiment, by one rule for every table: Table 1 and
Table 2 in the CLI, the dashboard and the report, and the dataframes. Pure.

An experiment names its runs (``run_name``): replica ``{experiment}-{label}-{letter}``,
``.N`` from its second attempt on; a fork its ``fork`` section made,
``{parent run}-to-{LABEL}``. A run's place (``run_places``) then says what it counts as:

- ``replica``: one of a model's replicas, under the model's label;
- ``fork``: a fork the experiment's file made, a group of its own named
  ``PARENT-LABEL -> TARGET-LABEL at K`` (never a replica of either model), its replica
  letter its parent's; a view counts its own cycles (K+1..), not those it copied;
- ``outside``: any other fork of a run (``contreact fork``, whose child inherits the
  experiment in its config): not one of the experiment's runs, so it is in none of the
  experiment's tables (the experiment page names it); picked by run id it is a group of
  its own, ``PARENT-REPLICA -> TARGET at K``;
- ``run``: any other run that names the experiment: under the model that ran.

Whether a run is a fork is what its log says (``RunForked``: its parent and K), never
guessed from its id. An experiment's tables count each replica's and each fork's
current attempt only (``select``), and forks as ``--forks`` asks (``ForkView``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

ForkView = Literal["none", "as-rows", "only"]
"""Forks in a table: left out (Table 2's default), as rows of their own, or alone."""
FORK_VIEWS: tuple[ForkView, ...] = get_args(ForkView)
Kind = Literal["replica", "fork", "outside", "run"]


def replica_letter(index: int) -> str:
    """A, B, ... Z, AA, AB, ...: the paper's variant names, extended."""
    letters = string.ascii_uppercase
    if index < len(letters):
        return letters[index]
    first, second = divmod(index - len(letters), len(letters))
    return letters[first] + letters[second]


def replica_run_id(experiment: str, label: str, letter: str) -> str:
    return f"{experiment}-{label}-{letter}"


def attempt_run_id(first: str, attempt: int) -> str:
    """The run id of a replica's ``attempt`` (1: the first id itself)."""
    return first if attempt <= 1 else f"{first}.{attempt}"


def fork_run_id(parent_run_id: str, label: str) -> str:
    """The id of the fork of ``parent_run_id`` (a replica's current attempt) to the
    model labelled ``label``."""
    return f"{parent_run_id}-to-{label}"


REPLICA_RUN_ID = re.compile(r"(.+)-([A-Z]{1,2})(?:\.(\d+))?")
"""What follows ``{experiment}-`` in a replica's run id: its label, its letter (two at
most) and, for a later attempt, ``.N``."""
FORK_RUN_ID = re.compile(r"(.+)-([A-Z]{1,2})(?:\.(\d+))?-to-([A-Za-z0-9][A-Za-z0-9_.-]*)")
"""What follows ``{experiment}-`` in a fork's run id (``fork_run_id``): the parent's
label, letter and attempt, then the label of the model it was forked to."""


class RunName(NamedTuple):
    """What an experiment's run id says: a replica's label, letter and attempt, or, for
    a fork (``target`` set), those of its parent and the label it was forked to."""

    label: str
    letter: str
    attempt: int = 1
    target: str | None = None


def run_name(run_id: str, experiment: str, *, fork: bool | None = None) -> RunName | None:
    """``run_id`` read as ``experiment`` names its runs, or None for a run not named so.
    ``fork``: whether the run is known to be a fork (its log says so); None reads a
    fork's shape first (``exswap-A-A-to-B``: label A, letter A, target B)."""
    if not experiment or not run_id.startswith(f"{experiment}-"):
        return None
    rest = run_id[len(experiment) + 1 :]
    if fork is not False:
        found = FORK_RUN_ID.fullmatch(rest)
        if found:
            label, letter, attempt, target = found.groups()
            return RunName(label, letter, int(attempt or 1), target)
    if fork is not True:
        found = REPLICA_RUN_ID.fullmatch(rest)
        if found:
            return RunName(found.group(1), found.group(2), int(found.group(3) or 1))
    return None


def label_and_replica(run_id: str, experiment: str) -> tuple[str, str] | None:
    """The model label and the replica letter ``experiment`` gave ``run_id``, or None
    for a run not named so and for a fork's id (``run_name`` reads those)."""
    name = run_name(run_id, experiment)
    if name is None or name.target is not None:
        return None
    return name.label, name.letter


@dataclass(frozen=True)
class RunFacts:
    """What a view knows of a run, enough to place it: from its config and its log."""

    run_id: str
    experiment: str = ""
    model: str = ""
    """The configured model."""
    ran: str = ""
    """The model that ran, when another answered instead ("" : the configured one)."""
    parent_run_id: str = ""
    """A fork's parent (its ``RunForked``); "" for a run that is no fork."""
    at_cycle: int = 0
    """A fork's K: the parent's cycle whose end it starts after."""


@dataclass(frozen=True)
class RunPlace:
    """Where a run stands: its group (Table 1's column, Table 2's row) and replica."""

    run_id: str
    kind: Kind
    group: str
    letter: str
    """The replica letter (a fork: its parent's); another run: its run id."""
    model: str
    attempt: int = 1
    """A replica's attempt (a fork: its parent's)."""
    label: str = ""
    """A replica's label, a fork's parent's."""
    target: str = ""
    """A fork's target: the label of the model it runs (else that model)."""
    at_cycle: int = 0
    parent_run_id: str = ""
    experiment: str = ""

    @property
    def is_fork(self) -> bool:
        """A fork of any kind (its first ``at_cycle`` cycles are its parent's)."""
        return bool(self.parent_run_id)

    @property
    def first_cycle(self) -> int:
        """The first cycle that is the run's own (a fork's: K + 1)."""
        return self.at_cycle + 1


def fork_group(parent: str, target: str, at_cycle: int) -> str:
    """A fork's group: ``PARENT-LABEL -> TARGET-LABEL at K``."""
    return f"{parent} -> {target} at {at_cycle}"


def run_places(facts: Iterable[RunFacts]) -> dict[str, RunPlace]:
    """Each run's place, by run id (see the module's docstring). The labels of an
    experiment's replicas among ``facts`` name an outside fork's target model."""
    runs = list(facts)
    models: dict[tuple[str, str], set[str]] = {}
    for run in runs:
        name = run_name(run.run_id, run.experiment, fork=False)
        if name is not None and not run.parent_run_id:
            models.setdefault((run.experiment, run.model), set()).add(name.label)
    return {run.run_id: _place(run, models) for run in runs}


def _place(run: RunFacts, labels: dict[tuple[str, str], set[str]]) -> RunPlace:
    ran = run.ran or run.model
    if not run.parent_run_id:
        name = run_name(run.run_id, run.experiment, fork=False)
        if name is None:
            return RunPlace(
                run.run_id, "run", ran, run.run_id, run.model, experiment=run.experiment
            )
        return RunPlace(
            run.run_id, "replica", name.label, name.letter, run.model, name.attempt, name.label,
            experiment=run.experiment,
        )  # fmt: skip
    parent = run_name(run.parent_run_id, run.experiment, fork=False)
    own = run_name(run.run_id, run.experiment, fork=True)
    k = run.at_cycle
    if (
        parent is not None
        and own is not None
        and own.target is not None
        and run.run_id == fork_run_id(run.parent_run_id, own.target)
    ):
        group = fork_group(parent.label, own.target, k)
        return RunPlace(
            run.run_id, "fork", group, parent.letter, run.model, parent.attempt,
            parent.label, own.target, k, run.parent_run_id, run.experiment,
        )  # fmt: skip
    named = labels.get((run.experiment, run.model), set())
    target = next(iter(named)) if len(named) == 1 else ran
    source = f"{parent.label}-{parent.letter}" if parent is not None else run.parent_run_id
    return RunPlace(
        run.run_id, "outside", fork_group(source, target, k), run.run_id, run.model, 1,
        parent.label if parent is not None else "", target, k, run.parent_run_id, run.experiment,
    )  # fmt: skip


@dataclass(frozen=True)
class Selection:
    """The runs an experiment's table counts, and those it leaves out, with why."""

    runs: tuple[RunPlace, ...]
    superseded: tuple[str, ...] = ()
    """Earlier attempts of a replica (or of a fork's parent) that ran again."""
    forks: tuple[str, ...] = ()
    """Forks left out by the view (``none``), or the replicas (``only``)."""
    outside: tuple[str, ...] = ()
    """Forks made outside the experiment's file."""

    def note_lines(self, view: ForkView) -> list[str]:
        """What was left out, one line each (none when nothing was)."""
        out = []
        if self.superseded:
            out.append(
                f"{len(self.superseded)} earlier attempt(s) left out (their replica ran "
                f"again): {', '.join(sorted(self.superseded))}"
            )
        if self.forks and view == "none":
            out.append(
                f"{len(self.forks)} fork run(s) left out (forks: none; as-rows shows each "
                "fork as a row of its own)"
            )
        elif self.forks:
            out.append(f"{len(self.forks)} replica run(s) left out (forks: only)")
        if self.outside:
            out.append(
                f"{len(self.outside)} fork(s) made outside the experiment's file left out "
                f"(not its runs): {', '.join(sorted(self.outside))}"
            )
        return out


def select(places: Iterable[RunPlace], forks: ForkView = "none") -> Selection:
    """What an experiment's table counts: each replica's and each fork's current attempt
    (the highest), the forks as ``forks`` says, never an outside fork; runs of their own
    as they are. In the order given."""
    given = list(places)
    current: dict[tuple[str, str, str, str], RunPlace] = {}
    for place in given:
        if place.kind in ("replica", "fork"):
            key = _slot(place)
            if key not in current or current[key].attempt < place.attempt:
                current[key] = place
    kept, superseded, left, outside = [], [], [], []
    for place in given:
        if place.kind == "outside":
            outside.append(place.run_id)
        elif place.kind in ("replica", "fork") and current[_slot(place)] is not place:
            superseded.append(place.run_id)
        elif (forks == "none" and place.kind == "fork") or (
            forks == "only" and place.kind != "fork"
        ):
            left.append(place.run_id)
        else:
            kept.append(place)
    return Selection(tuple(kept), tuple(superseded), tuple(left), tuple(outside))


def _slot(place: RunPlace) -> tuple[str, str, str, str]:
    """A replica's (or a fork's) place, whichever attempt fills it."""
    return (place.experiment, place.kind, place.group, place.letter)


def group_order(places: Iterable[RunPlace]) -> list[str]:
    """The groups in a table's order: the replicas' labels, runs of their own, then
    the forks (each part sorted)."""
    rank = {"replica": 0, "run": 1, "fork": 2, "outside": 3}
    seen = sorted({(rank[p.kind], p.group) for p in places})
    return list(dict.fromkeys(group for _, group in seen))


def ordered(places: Iterable[RunPlace]) -> list[RunPlace]:
    """Places in their table's order: by group (``group_order``), then replica."""
    given = list(places)
    order = {group: i for i, group in enumerate(group_order(given))}
    return sorted(given, key=lambda p: (order[p.group], len(p.letter), p.letter, p.run_id))
