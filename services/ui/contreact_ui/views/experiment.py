"""An experiment's page: its design (models x replicas, the settings every run shares
and those of each model), each replica's current run and its attempts, and the
downloads of the whole experiment (every run's seed-003 export in one zip, Table 1 as
CSV).

The design is read back from the runs' configs as logged (``RunRequested``): the
experiment file is the CLI's, the logs are what ran. Each run is placed by the rule
every table uses (``views.places``): replicas by their run ids,
``{experiment}-{label}-{letter}`` and ``.{attempt}`` from a second attempt on; the
forks its ``fork`` section made (``{parent run}-to-{LABEL}``, their logs say parent and
K) apart, named by their own label, with the section as they show it; a fork made
outside the file (``contreact fork``, whose child inherits the experiment) listed as
such, never as a replica, and left out of the zip and the tables; a run that names the
experiment without a replica's shape is a replica of its own, labelled by its model.
"""

from __future__ import annotations

import csv
import io
import sqlite3
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from contreact_events.config import RunConfig
from contreact_events.config.run_places import ForkView, RunPlace, select
from contreact_events.exceptions import ContReActEventError
from contreact_events.history.export import export_records
from contreact_events.wire.codec import event_from_json
from contreact_ui.exceptions import RunNotProjected
from contreact_ui.models import Link, RunRow
from contreact_ui.models.research import (
    ExperimentDesign,
    ExperimentPage,
    ForkDesign,
    ForkRow,
    ReplicaRow,
    RunAttempt,
)
from contreact_ui.views.compare import compare_page
from contreact_ui.views.composer import run_config
from contreact_ui.views.events import events_jsonl
from contreact_ui.views.experiment_logs import self_reports
from contreact_ui.views.places import places_of
from contreact_ui.views.runs import RUN_COLUMNS, run_row_of

NOT_DESIGN = frozenset({"run_id", "experiment"})
"""Config keys that name a run, not a setting of the design."""
ALWAYS = frozenset({"cycle_count", "backend"})
"""Shown among the shared settings even at their default."""


def experiment_runs(conn: sqlite3.Connection, name: str) -> list[RunRow]:
    rows = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE experiment = ? ORDER BY run_id", (name,)
    ).fetchall()
    if not rows:
        raise RunNotProjected(
            f"no experiment '{name}' here: no run names it yet (see /runs, column experiment)"
        )
    return [run_row_of(r) for r in rows]


def experiment_page(conn: sqlite3.Connection, name: str) -> ExperimentPage:
    every = experiment_runs(conn, name)
    places = places_of(conn, [r.run_id for r in every])
    runs = [r for r in every if not places[r.run_id].is_fork]
    configs = _configs(conn, [r.run_id for r in runs])
    replicas: dict[str, list[tuple[int, RunRow]]] = {}
    names: dict[str, tuple[str, str]] = {}
    for run in runs:
        place = places[run.run_id]
        replica = f"{place.group}-{place.letter}"
        replicas.setdefault(replica, []).append((place.attempt, run))
        names[replica] = (place.group, place.letter)
    advisories = _last_advisories(conn, [r.run_id for r in runs])
    current = {key: max(found, key=lambda a: a[0])[1] for key, found in replicas.items()}
    by_label: dict[str, list[str]] = {}
    for key in sorted(current):
        by_label.setdefault(names[key][0], []).append(current[key].run_id)
    rows = []
    for key in sorted(current, key=lambda k: (names[k][0], len(names[k][1]), names[k][1])):
        label, letter = names[key]
        run = current[key]
        rows.append(
            ReplicaRow(
                replica=key,
                label=label,
                letter=letter,
                condition=configs[run.run_id].get("condition"),
                model=run.model,
                resolved_model=run.resolved_model,
                run_id=run.run_id,
                attempts=[
                    RunAttempt(run_id=r.run_id, attempt=n, status=r.status)
                    for n, r in sorted(replicas[key], key=lambda a: a[0])
                ],
                status=run.status,
                cycle=run.cycle,
                cycle_count=run.cycle_count,
                last_advisory=advisories.get(run.run_id, ""),
                siblings=[r for r in by_label[label] if r != run.run_id],
                log_problem=run.projection_error if run.log_cut_short else None,
            )
        )
    statuses: dict[str, int] = {}
    for row in rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    base = f"/experiments/{name}"
    forks = fork_rows(every, places)
    made = design(
        _by_label(rows, configs),
        letters=sorted({r.letter for r in rows}, key=lambda x: (len(x), x)),
    )
    conditioned = [r.run_id for r in rows if r.condition is not None]
    return ExperimentPage(
        experiment=name,
        self_reports=self_reports(conn, name, conditioned) if conditioned else None,
        design=made.model_copy(update={"fork": fork_design(forks, places)}),
        replicas=rows,
        forks=forks,
        statuses=statuses,
        left_out=unreadable(every),
        downloads=[
            Link(label="every run's export (seed-003 LogRecords), zip", href=f"{base}/exports.zip"),
            Link(label="Table 1 by model, CSV", href=f"{base}/table1.csv"),
            Link(label="compare the models", href=f"/compare?experiment={name}"),
            *(_fork_links(name) if any(f.made_by == "experiment" for f in forks) else []),
        ],
    )


def unreadable(runs: Sequence[RunRow]) -> list[str]:
    """The runs whose logs cannot be read, each with why: what the experiment's page,
    its zip and its Table 1 name instead of leaving them out silently."""
    return [f"{r.run_id}: {r.cut_short_reason}" for r in runs if r.log_cut_short]


def _fork_links(name: str) -> list[Link]:
    with_forks = "forks=as-rows"
    return [
        Link(
            label="Table 1 with the forks, CSV", href=f"/experiments/{name}/table1.csv?{with_forks}"
        ),
        Link(label="compare with the forks", href=f"/compare?experiment={name}&{with_forks}"),
    ]


def fork_rows(runs: Sequence[RunRow], places: Mapping[str, RunPlace]) -> list[ForkRow]:
    """The forks of the experiment's replicas: its file's (their current attempts, the
    forks of earlier attempts named under each), then those made outside it."""
    forks = [places[r.run_id] for r in runs if places[r.run_id].is_fork]
    current = select(forks, "as-rows")
    by_id = {r.run_id: r for r in runs}
    earlier: dict[tuple[str, str], list[str]] = {}
    for run_id in current.superseded:
        place = places[run_id]
        earlier.setdefault((place.group, place.letter), []).append(run_id)
    out = []
    for place in sorted(
        [*current.runs, *(places[r] for r in current.outside)],
        key=lambda p: (p.kind != "fork", p.group, len(p.letter), p.letter),
    ):
        run = by_id[place.run_id]
        parent = f"{place.label}-{place.letter}" if place.kind == "fork" else place.group
        out.append(
            ForkRow(
                name=f"{parent} -> {place.target}" if place.kind == "fork" else place.group,
                group=place.group,
                made_by="experiment" if place.kind == "fork" else "fork",
                parent_run_id=place.parent_run_id,
                at_cycle=place.at_cycle,
                target=place.target,
                model=run.model,
                resolved_model=run.resolved_model,
                run_id=run.run_id,
                status=run.status,
                cycle=run.cycle,
                cycle_count=run.cycle_count,
                earlier=earlier.get((place.group, place.letter), []),
            )
        )
    return out


def fork_design(forks: Sequence[ForkRow], places: Mapping[str, RunPlace]) -> ForkDesign | None:
    """The ``fork`` section as the file's forks show it: K, their cycles, the models
    forked (``from``) and forked to (``to``)."""
    made = [f for f in forks if f.made_by == "experiment"]
    if not made:
        return None
    return ForkDesign(
        at_cycle=sorted({f.at_cycle for f in made}),
        cycle_count=sorted({f.cycle_count for f in made}),
        from_labels=sorted({places[f.run_id].label for f in made}),
        to=sorted({f.target for f in made}),
        groups=list(dict.fromkeys(f.group for f in made)),
        runs=len(made),
    )


def _by_label(
    rows: Sequence[ReplicaRow], configs: Mapping[str, dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row.label, []).append(configs.get(row.run_id, {}))
    return out


def design(by_label: Mapping[str, list[dict[str, Any]]], letters: list[str]) -> ExperimentDesign:
    """Shared settings (alike in every run), each model's own (alike in its runs, not in
    all), and those that differ between one model's replicas."""
    flat = {label: [flatten(c) for c in configs] for label, configs in by_label.items()}
    every = [c for configs in flat.values() for c in configs]
    keys = sorted({k for c in every for k in c})
    alike = {k: every[0].get(k) for k in keys if _alike([c.get(k) for c in every])}
    defaults = DEFAULTS
    shared = {k: v for k, v in alike.items() if k in ALWAYS or defaults.get(k, v) != v}
    per_model: dict[str, dict[str, Any]] = {}
    per_replica: set[str] = set()
    for label, configs in flat.items():
        own = {}
        for key in keys:
            if key in alike:
                continue
            values = [c.get(key) for c in configs]
            if _alike(values):
                own[key] = values[0]
            else:
                per_replica.add(key)
        per_model[label] = own
    return ExperimentDesign(
        models=list(by_label),
        replicas=letters,
        shared=shared,
        at_default=len(alike) - len(shared),
        per_model=per_model,
        per_replica=sorted(per_replica),
    )


def _alike(values: list[Any]) -> bool:
    return all(v == values[0] for v in values)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config's settings by dotted key (``diversity.mode``), names left out."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if not prefix and key in NOT_DESIGN:
            continue
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def _configs(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each run's config as submitted (its ``RunRequested``, upcast to today's shape)."""
    return {run_id: run_config(conn, run_id).model_dump(mode="json") for run_id in run_ids}


def _last_advisories(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, str]:
    """Each run's last similarity assessment, as ``contreact experiment status`` says it:
    ``level similarity (cN)``."""
    marks = ", ".join("?" * len(run_ids))
    out: dict[str, str] = {}
    for row in conn.execute(
        "SELECT c.run_id, c.cycle, c.level, c.max_similarity, c.most_similar_cycle FROM cycles c "
        "JOIN (SELECT run_id, max(cycle) AS last FROM cycles "
        f"WHERE run_id IN ({marks}) AND max_similarity IS NOT NULL GROUP BY run_id) m "
        "ON c.run_id = m.run_id AND c.cycle = m.last",
        list(run_ids),
    ):
        out[row["run_id"]] = (
            f"{row['level']} {row['max_similarity']:.2f} (c{row['most_similar_cycle']}) "
            f"at cycle {row['cycle']}"
        )
    return out


def exports_zip(conn: sqlite3.Connection, name: str) -> bytes:
    """Every run's seed-003 export (``RUN.jsonl``, as `contreact export` writes it) and
    its log as stored (``logs/RUN.events.jsonl``), in one zip; the forks its file made
    under ``forks/``; a fork made outside the file is not one of its runs: left out. A
    run whose log cannot be read is left out too, and named with why in
    ``LEFT_OUT.txt``: the others download as before."""
    runs = experiment_runs(conn, name)
    places = places_of(conn, [r.run_id for r in runs])
    left_out = unreadable(runs)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for run in runs:
            kind = places[run.run_id].kind
            if kind == "outside" or run.log_cut_short:
                continue
            folder = f"{name}/forks" if kind == "fork" else name
            raw = events_jsonl(conn, run.run_id)
            try:
                records = export_records([event_from_json(line) for line in raw])
            except ContReActEventError as exc:
                left_out.append(f"{run.run_id}: it cannot be exported ({exc})")
                continue
            archive.writestr(
                f"{folder}/{run.run_id}.jsonl", b"".join(orjson.dumps(r) + b"\n" for r in records)
            )
            archive.writestr(f"{folder}/logs/{run.run_id}.events.jsonl", b"".join(raw))
        if left_out:
            note = "Left out of this zip:\n" + "".join(f"- {line}\n" for line in left_out)
            archive.writestr(f"{name}/LEFT_OUT.txt", note.encode())
    return buffer.getvalue()


def table1_csv(conn: sqlite3.Connection, name: str, forks: ForkView | None = None) -> str:
    """Table 1 of the experiment's runs by model (the compare page's table, its forks
    as ``forks`` says), one row per metric and model: every figure the table gives,
    the paper's beside; then a ``left out`` row for each run the figures do not count
    (not completed, or its log cannot be read), its source saying which and why."""
    experiment_runs(conn, name)
    page = compare_page(conn, runs=[], models=[], experiment=name, by="model", forks=forks)
    labels = [g.label for g in page.groups]
    first = page.table1[0].model_dump(mode="json")  # Table 1 always has its metrics
    columns = [k for k, v in first.items() if isinstance(v, list) and k != "paper"]
    scalars = [k for k, v in first.items() if not isinstance(v, list)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*scalars, "model", "source", *columns, "paper"])
    for row in page.table1:
        data = row.model_dump(mode="json")
        names = [data[k] for k in scalars]
        for index, label in enumerate(labels):
            cells = [_cell(data[c], index) for c in columns]
            writer.writerow([*names, label, "this experiment", *cells, ""])
        for index, label in enumerate(page.paper_columns):
            paper = _cell(data.get("paper") or [], index)
            writer.writerow([*names, label, "paper", *[""] * len(columns), paper])
    blank = [""] * (len(scalars) - 1)
    for group in page.groups:
        for why in group.left_out:
            writer.writerow(["left out", *blank, group.label, why, *[""] * len(columns), ""])
    return out.getvalue()


def _cell(values: list[Any], index: int) -> Any:
    value = values[index] if index < len(values) else None
    return "" if value is None else value


DEFAULTS = flatten(RunConfig(run_id="x", model_name="x", cycle_count=1).model_dump(mode="json"))
"""A run config's defaults by dotted key: shared settings at their default are counted,
not listed."""
