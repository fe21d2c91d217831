"""The dataframes: one table per level, each with the ids that join it to the others
(``run_id``; ``run_id`` + ``cycle``; ``task_id`` for tool calls and operator exchanges),
and a declared dtype for every column, so a parquet or CSV file reads back the same.

A run's ``label``, ``replica`` and ``kind`` are its place in its experiment, placed
among every run of the frames by the one rule the dashboard and the report use
(``contreact_events.config.run_places``): a replica under its model's label, a fork of
the experiment's file as ``PARENT-LABEL -> TARGET-LABEL at K`` with its parent's letter,
any other fork ``outside``, any other run under its model. A fork's rows are its own
cycles' unless the builders are asked for the ``inherited`` ones too.

Table 1's "final unique memory keys" (``runs.memory_keys``) counts the agent's own
keys, those whose last value the agent wrote; the memory policy's stores
(``written_by: platform``) are counted apart (``platform_memory_keys``): the paper's
agents ran without a policy, and the column compares what an agent kept. The
dashboard's compare page counts the same; its run list's "memory keys" is every key in
memory, as the memory page lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from operator import itemgetter
from typing import Any, Final, cast

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs published

from contreact_analysis.frames.places import place_columns, run_facts
from contreact_analysis.frames.run_rows import TOOL_COLUMNS, RunRows, run_rows
from contreact_analysis.frames.self_reports import SELF_REPORTS, report_rows
from contreact_events.catalog import Event
from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.config.run_places import Kind, RunPlace, run_places
from contreact_events.protocol.table1 import TABLE1
from contreact_events.wire.codec import bulk

TS: Final = "datetime64[ns, UTC]"
STR = "string"

RUNS: dict[str, str] = {
    "run_id": STR,
    "experiment": STR,
    "condition": STR,
    "label": STR,
    "replica": STR,
    "kind": STR,
    "attempt": "int64",
    "parent_run_id": STR,
    "at_cycle": "Int64",
    "researcher_question": STR,  # ``contreact ask``: cycle at_cycle + 1 opens with it
    "model": STR,
    "resolved_model": STR,
    "backend": STR,
    "model_digest": STR,
    "status": STR,
    "failure_reason": STR,
    "cycle_count": "int64",
    "cycles_done": "int64",
    "seed": "Int64",
    "created_at": TS,
    "started_at": TS,
    "ended_at": TS,
    "duration_s": "float64",
    "llm_calls": "int64",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "tokens": "int64",
    "llm_seconds": "float64",
    "cost": "float64",
    "uncosted_calls": "int64",
    "events": "int64",
    "memory_keys": "int64",
    "platform_memory_keys": "int64",
    "code_version": STR,
    "config_sha256": STR,
    "prompt_hashes": STR,
    "config": STR,
    "state_digest": STR,
    **{row.metric: "float64" for row in TABLE1},
}
CYCLES: dict[str, str] = {
    "run_id": STR,
    "cycle": "int64",
    "started_at": TS,
    "ended_at": TS,
    "ended_by": STR,
    "complete": "bool",
    "inherited": "bool",
    **{
        name: ("float64" if info.annotation is float else "int64")
        for name, info in CycleMetrics.model_fields.items()
    },
    **dict.fromkeys(TOOL_COLUMNS.values(), "int64"),
    "steps": "int64",
    "tokens": "int64",
    "cost": "float64",
    "uncosted_calls": "int64",
    "memory_keys": "int64",
    "advisory": STR,
    "reflection": STR,
    "reflection_complete": "bool",
    "similarity_level": STR,
    "max_similarity": "float64",
    "most_similar_cycle": "Int64",
    "advisory_given": STR,
}
TOOL_CALLS: dict[str, str] = {
    "run_id": STR,
    "task_id": STR,
    "cycle": "int64",
    "step": "int64",
    "index": "int64",
    "tool": STR,
    "tool_name": STR,
    "arguments": STR,
    "arguments_error": STR,
    "requested_at": TS,
    "completed_at": TS,
    "ok": "boolean",
    "output": STR,
    "output_chars": "Int64",
}
MESSAGES: dict[str, str] = {
    "run_id": STR,
    "index": "int64",
    "cycle": "int64",
    "role": STR,
    "content": STR,
    "chars": "int64",
    "tool_calls": "int64",
    "tool_name": STR,
}
EVENTS: dict[str, str] = {
    "run_id": STR,
    "seq": "int64",
    "event_id": STR,
    "type": STR,
    "schema_version": "int64",
    "ts": TS,
    "cycle": "int64",
    "task_id": STR,
    "cost": "Float64",
}
OPERATOR: dict[str, str] = {
    "run_id": STR,
    "task_id": STR,
    "cycle": "int64",
    "message": STR,
    "sent_at": TS,
    "reply": STR,
    "replied_by": STR,
    "replied_at": TS,
}
MEMORY: dict[str, str] = {
    "run_id": STR,
    "seq": "int64",
    "cycle": "int64",
    "key": STR,
    "change": STR,
    "value": STR,
    "written_by": STR,
    "ts": TS,
}


@dataclass(frozen=True)
class RunFrames:
    """The tables of a set of runs (see ``SCHEMAS`` for every column's dtype)."""

    runs: pd.DataFrame
    cycles: pd.DataFrame
    tool_calls: pd.DataFrame
    messages: pd.DataFrame
    events: pd.DataFrame
    operator: pd.DataFrame
    memory: pd.DataFrame
    self_reports: pd.DataFrame
    """One row per call of a tool that carries a self-report (``self_reports``)."""

    def tables(self) -> dict[str, pd.DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def places(self) -> list[RunPlace]:
        """Each run's place in its experiment, as the runs table holds it."""
        columns = ["run_id", "kind", "label", "replica", "model", "attempt", "parent_run_id"]
        rows = self.runs[[*columns, "at_cycle", "experiment"]].astype(object)
        return [
            RunPlace(
                run_id=str(run_id),
                kind=cast(Kind, str(kind)),
                group=str(label),
                letter=str(run_id) if pd.isna(replica) else str(replica),
                model=str(model),
                attempt=int(attempt),
                parent_run_id="" if pd.isna(parent) else str(parent),
                at_cycle=0 if pd.isna(k) else int(k),
                experiment="" if pd.isna(experiment) else str(experiment),
            )
            for run_id, kind, label, replica, model, attempt, parent, k, experiment in (
                rows.itertuples(index=False, name=None)
            )
        ]


SCHEMAS: dict[str, dict[str, str]] = {
    "runs": RUNS,
    "cycles": CYCLES,
    "tool_calls": TOOL_CALLS,
    "messages": MESSAGES,
    "events": EVENTS,
    "operator": OPERATOR,
    "memory": MEMORY,
    "self_reports": SELF_REPORTS,
}


def frame(rows: Sequence[Mapping[str, Any]], schema: Mapping[str, str]) -> pd.DataFrame:
    """``rows`` (each with every column of ``schema``) as a dataframe with exactly
    ``schema``'s columns and dtypes. Timestamps go through pyarrow, which converts
    pydantic's timezone-aware datetimes about three times as fast as ``to_datetime``."""
    out: dict[str, pd.Series[Any]] = {}
    for column, dtype in schema.items():
        values = list(map(itemgetter(column), rows))
        if dtype == TS:
            stamps = pa.array(values, type=pa.timestamp("ns", tz="UTC"))
            out[column] = pd.Series(stamps.to_pandas(), dtype=TS)
        else:
            out[column] = pd.Series(values, dtype=pd.api.types.pandas_dtype(dtype))
    return pd.DataFrame(out, columns=list(schema))


def frames_from_rows(runs: Iterable[RunRows]) -> RunFrames:
    """The tables of the runs' rows, each run placed among them all (``run_places``)."""
    collected: dict[str, list[Mapping[str, Any]]] = {name: [] for name in SCHEMAS}
    given = list(runs)
    places = run_places(run_facts(rows.run) for rows in given)
    for rows in given:
        collected["runs"].append(rows.run | place_columns(places[rows.run["run_id"]]))
        collected["cycles"].extend(rows.cycles)
        collected["tool_calls"].extend(rows.tool_calls)
        collected["messages"].extend(rows.messages)
        collected["events"].extend(rows.events)
        collected["operator"].extend(rows.operator)
        collected["memory"].extend(rows.memory)
        collected["self_reports"].extend(
            report_rows(rows.run, rows.tool_calls, places[rows.run["run_id"]].group)
        )
    return RunFrames(**{name: frame(collected[name], SCHEMAS[name]) for name in SCHEMAS})


def build_frames(
    logs: Mapping[str, Iterable[Event]], *, digest: bool = True, inherited: bool = False
) -> RunFrames:
    """The tables of the runs in ``logs`` (run id -> its events, in log order), each run
    folded once (the cyclic garbage collector paused: ``bulk``); ``inherited``: a fork's
    copied cycles too. UnreadableRun names a run whose log does not fold."""
    with bulk():
        return frames_from_rows(
            run_rows(run_id, events, digest=digest, inherited=inherited)
            for run_id, events in logs.items()
        )
