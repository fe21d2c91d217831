"""Runs, models or experiments side by side, with the paper's tables beside.

An experiment's runs are grouped and counted by the rule the report and ``analyze``
use (``views.places``): each replica's current attempt under its label, the
experiment's forks as ``A -> B at K`` groups of their own when asked (``forks``), never
under a model; a fork's figures are its own cycles' (K+1..). Runs picked by id are
each counted, models' runs grouped by the model that ran."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from contreact_events.config.run_places import ForkView, RunPlace, group_order
from contreact_events.protocol.table1 import TABLE1
from contreact_ui import paper
from contreact_ui.exceptions import BadQuery, RunNotProjected
from contreact_ui.figures import summarize
from contreact_ui.models import (
    CompareGroup,
    ComparePage,
    CycleSeries,
    PaperTable2,
    RunRow,
    Table1Row,
)
from contreact_ui.views.places import counted, places_of
from contreact_ui.views.runs import distinct, run_rows

MAX_COMPARE_RUNS = 500
PAPER_CYCLES = 10
"""Cycles per run in the paper's Table 1."""

SERIES = {
    "memory_ops_total": "Memory operations",
    "messages_to_operator": "Messages to the operator",
    "tool_calls": "Tool calls",
    "response_chars": "Response characters",
    "reflection_chars": "Reflection characters",
    "tokens": "Tokens (prompt + completion)",
    "llm_seconds": "LLM time (s)",
    "max_similarity": "Max similarity to an earlier reflection",
}


def compare_page(
    conn: sqlite3.Connection,
    *,
    runs: Sequence[str],
    models: Sequence[str],
    experiment: str | None,
    by: str | None,
    forks: ForkView | None = None,
) -> ComparePage:
    view: ForkView = forks or ("as-rows" if runs else "none")
    every = list(places_of(conn, _select_runs(conn, runs, models, experiment)).values())
    selection = counted(every, view, by_id=bool(runs))
    places = {p.run_id: p for p in selection.runs}
    selected = list(places)
    rows = run_rows(conn, selected)
    order = {run_id: i for i, run_id in enumerate(selected)}
    rows.sort(key=lambda r: order[r.run_id])
    grouping = by or ("run" if runs else "model")
    if grouping not in ("model", "run", "experiment"):
        raise BadQuery(f"by={grouping!r}: group by model, run or experiment")
    groups: dict[str, list[RunRow]] = {g: [] for g in _group_order(grouping, experiment, places)}
    for row in rows:
        groups.setdefault(_group(grouping, experiment, places[row.run_id], row), []).append(row)
    groups = {label: members for label, members in groups.items() if members}
    basis = {label: completed(members) for label, members in groups.items()}
    firsts = {p.run_id: p.first_cycle for p in selection.runs if p.is_fork}
    totals = _run_totals(conn, selected, firsts)
    agent_keys = _agent_memory_keys(conn, selected)
    per_cycle = _per_cycle(conn, selected, firsts)
    table1 = []
    reference = paper.table1()
    for metric, label, source, scale in TABLE1:
        summaries = []
        for members in basis.values():
            figures = [
                (
                    agent_keys.get(row.run_id, 0)
                    if source is None
                    else totals.get(row.run_id, {}).get(source, 0)
                )
                / scale
                for row in members
            ]
            summaries.append(summarize(figures))
        table1.append(
            Table1Row(
                metric=metric,
                label=label,
                ours=[f.mean for f in summaries],
                sd=[f.sd for f in summaries],
                low=[f.low for f in summaries],
                high=[f.high for f in summaries],
                no_interval=[f.no_interval for f in summaries],
                n=[f.n for f in summaries],
                paper=reference.rows.get(metric, []),
            )
        )
    series = []
    for label, members in groups.items():
        cycles = sorted({c for row in members for c in per_cycle.get(row.run_id, {})})
        values: dict[str, list[float | None]] = {}
        for metric in SERIES:
            column: list[float | None] = []
            for c in cycles:
                samples = [
                    v
                    for row in members
                    if (v := per_cycle.get(row.run_id, {}).get(c, {}).get(metric)) is not None
                ]
                column.append(round(sum(samples) / len(samples), 4) if samples else None)
            values[metric] = column
        series.append(CycleSeries(label=label, cycles=cycles, values=values))
    t2 = paper.table2()
    return ComparePage(
        by=grouping,
        selected_runs=list(runs),
        selected_models=list(models),
        experiment=experiment,
        groups=[
            CompareGroup(
                label=label,
                runs=[r.run_id for r in members],
                models=sorted({ran(r) for r in members}),
                configured_models=sorted({r.model for r in members}),
                cycle_counts=sorted({r.cycle_count for r in members}),
                left_out=[_why_left_out(r) for r in _left_out(members, basis[label])],
            )
            for label, members in groups.items()
        ],
        table1=table1,
        table1_warnings=[
            *selection.note_lines(view),
            *table1_warnings(rows, groups, basis, by_label=bool(experiment)),
        ],
        paper_columns=reference.columns,
        series=series,
        metrics=SERIES,
        available_models=sorted(
            set(distinct(conn, "model")) | set(distinct(conn, "resolved_model"))
        ),
        available_experiments=distinct(conn, "experiment"),
        available_runs=[
            r[0]
            for r in conn.execute(
                "SELECT run_id FROM runs ORDER BY created_at DESC LIMIT ?", (MAX_COMPARE_RUNS,)
            )
        ],
        table2=PaperTable2(
            evaluators=t2.evaluators,
            histories=t2.histories,
            inter_rater_correlation=t2.inter_rater_correlation,
        ),
        assessments_available=paper.assessments_available(),
        citation=paper.CITATION,
        forks=view,
    )


def _group(grouping: str, experiment: str | None, place: RunPlace, row: RunRow) -> str:
    """A run's group: its run id, its experiment, or its model: in an experiment its
    place's group (a replica's label, a fork's ``A -> B at K``), else the model that
    ran (a fork still a group of its own)."""
    if grouping == "run":
        return row.run_id
    if grouping == "experiment":
        return row.experiment or "(none)"
    if experiment or place.is_fork:
        return place.group
    return ran(row) or "(none)"


def _group_order(grouping: str, experiment: str | None, places: dict[str, RunPlace]) -> list[str]:
    """An experiment's groups in the report's order (labels, then forks)."""
    return group_order(places.values()) if grouping == "model" and experiment else []


def ran(row: RunRow) -> str:
    """The model that ran: the configured one unless another answered instead."""
    return row.resolved_model or row.model


def completed(members: list[RunRow]) -> list[RunRow]:
    """The runs Table 1 counts: the completed ones; a group with none yet (a live run)
    counts what its runs did so far, and says so. A run whose log cannot be read is
    never counted: its figures would be those of the events read before the problem."""
    readable = [r for r in members if not r.log_cut_short]
    completed = [r for r in readable if r.status == "completed"]
    return completed or readable


def _why_left_out(row: RunRow) -> str:
    if row.log_cut_short:
        return f"{row.run_id}: {row.cut_short_reason}"
    return f"{row.run_id} ({row.status})"


def _left_out(members: list[RunRow], counted: list[RunRow]) -> list[RunRow]:
    """The members Table 1 does not count (by run id: comparing rows field by field
    made the page quadratic in its runs)."""
    kept = {r.run_id for r in counted}
    return [r for r in members if r.run_id not in kept]


def table1_warnings(
    rows: Sequence[RunRow],
    groups: dict[str, list[RunRow]],
    basis: dict[str, list[RunRow]],
    *,
    by_label: bool = False,
) -> list[str]:
    """What keeps these figures from comparing one to one with the paper's."""
    out = []
    other = sorted({r.cycle_count for r in rows if r.cycle_count != PAPER_CYCLES})
    if other:
        counts = ", ".join(str(c) for c in other)
        out.append(
            f"runs of {counts} cycle(s) are here: the paper's figures are totals over "
            f"{PAPER_CYCLES} cycles, so compare the columns of equal cycle counts only"
        )
    left = [r for label, members in groups.items() for r in _left_out(members, basis[label])]
    broken = [r for r in left if r.log_cut_short]
    if broken:
        out.append(
            f"{len(broken)} run(s) whose log cannot be read are left out of the figures: "
            + "; ".join(_why_left_out(r) for r in broken)
        )
    left = [r for r in left if not r.log_cut_short]
    if left:
        statuses = ", ".join(sorted({r.status for r in left}))
        out.append(
            f"{len(left)} run(s) not completed ({statuses}) are left out of the figures "
            "(n counts the completed runs)"
        )
    so_far = [
        label for label, members in basis.items() if members and members[0].status != "completed"
    ]
    if so_far:
        out.append(
            f"no run of {', '.join(so_far)} has completed: its figures are what its runs did so far"
        )
    swapped = sorted({f"{r.resolved_model} for {r.model}" for r in rows if ran(r) != r.model})
    if swapped:
        out.append(
            "a model ran INSTEAD OF the configured one: "
            + "; ".join(swapped)
            + (" (filed under its label)" if by_label else " (filed under the model that ran)")
        )
    return out


def _select_runs(
    conn: sqlite3.Connection, runs: Sequence[str], models: Sequence[str], experiment: str | None
) -> list[str]:
    if runs:
        found = {r.run_id for r in run_rows(conn, runs)}
        missing = [r for r in runs if r not in found]
        if missing:
            raise RunNotProjected(f"no run {', '.join(map(repr, missing))} here (see /runs)")
        return list(dict.fromkeys(runs))
    where, args = [], []
    if models:
        marks = ", ".join("?" * len(models))
        where.append(
            f"(CASE resolved_model WHEN '' THEN model ELSE resolved_model END IN ({marks}) "
            f"OR model IN ({marks}))"
        )
        args += [*models, *models]
    if experiment:
        where.append("experiment = ?")
        args.append(experiment)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT run_id FROM runs {clause} ORDER BY model, created_at LIMIT ?",
            [*args, MAX_COMPARE_RUNS],
        )
    ]


def _run_totals(
    conn: sqlite3.Connection, run_ids: Sequence[str], firsts: dict[str, int]
) -> dict[str, dict[str, float]]:
    """Each run's Table 1 sums over its own cycles (a fork's from ``firsts[run]`` on)."""
    if not run_ids:
        return {}
    columns = [c for _, _, c, _ in TABLE1 if c]
    values = ", ".join("(?, ?)" for _ in run_ids)
    rows = conn.execute(
        f"WITH own(run_id, first) AS (VALUES {values}) "
        f"SELECT c.run_id, {', '.join(f'sum(c.{c})' for c in columns)} FROM cycles c "
        "JOIN own ON own.run_id = c.run_id WHERE c.cycle >= own.first GROUP BY c.run_id",
        [x for run_id in run_ids for x in (run_id, firsts.get(run_id, 1))],
    )
    return {r[0]: dict(zip(columns, r[1:], strict=True)) for r in rows}


def _agent_memory_keys(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, int]:
    """Table 1's unique memory keys: per run, the keys in memory at its end whose last
    change the agent made (the memory policy's stores are the platform's, not the
    agent's: the paper's agents had no policy)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(  # SQLite: a bare column beside max() is read from its row
        "SELECT run_id, count(*) FROM (SELECT run_id, key, change, written_by, max(seq) "
        f"FROM memory_changes WHERE run_id IN ({marks}) GROUP BY run_id, key) "
        "WHERE change != 'deleted' AND written_by = 'agent' GROUP BY run_id",
        list(run_ids),
    )
    return {r[0]: int(r[1]) for r in rows}


def _per_cycle(
    conn: sqlite3.Connection, run_ids: Sequence[str], firsts: dict[str, int]
) -> dict[str, dict[int, dict[str, float | None]]]:
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    out: dict[str, dict[int, dict[str, float | None]]] = {}
    for r in conn.execute(
        "SELECT run_id, cycle, memory_ops_total, messages_to_operator, tool_calls, "
        "response_chars, reflection_chars, prompt_tokens + completion_tokens AS tokens, "
        f"llm_seconds, max_similarity FROM cycles WHERE run_id IN ({marks}) "
        "AND ended_by IS NOT NULL",
        list(run_ids),
    ):
        row = dict(r)
        run_id, cycle = row.pop("run_id"), row.pop("cycle")
        if cycle >= firsts.get(run_id, 1):
            out.setdefault(run_id, {})[cycle] = row
    return out
