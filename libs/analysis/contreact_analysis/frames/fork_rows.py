"""A fork's own rows: its log starts with its parent's events up to the end of cycle K
(copied, re-keyed), so every table would count those cycles twice, once for the parent
and once for the fork. Its own rows are those of cycles K+1.. (and of its own events),
its totals and Table 1 figures are summed over them; the final unique memory keys stay
what the run ends with. Pure: no I/O."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contreact_events.history.run_summary import run_metrics
from contreact_events.protocol.table1 import TABLE1, run_table1

if TYPE_CHECKING:
    from contreact_analysis.frames.run_rows import RunRows


def own_rows(rows: RunRows) -> RunRows:
    """``rows`` without the cycles and events a fork copied from its parent; a run that
    is no fork as it is."""
    forked, state = rows.forked, rows.state
    if forked is None or state is None:
        return rows
    k = forked.at_cycle
    metrics = run_metrics(state)[k:]
    run = dict(rows.run)
    figures = run_table1(metrics, 0)
    run.update({m.metric: figures[m.metric] for m in TABLE1 if m.source is not None})
    prompt = sum(m.prompt_tokens for m in metrics)
    completion = sum(m.completion_tokens for m in metrics)
    ended = run["ended_at"]
    run.update(
        cycles_done=max(len(state.cycle_metrics) - k, 0),
        created_at=forked.ts,
        duration_s=(ended - forked.ts).total_seconds() if ended else None,
        llm_calls=sum(m.llm_calls for m in metrics),
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens=prompt + completion,
        llm_seconds=sum(m.llm_seconds for m in metrics),
        events=state.seq - forked.prefix_len,
    )

    def own(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [row for row in table if row["cycle"] > k]

    return replace(
        rows,
        run=run,
        cycles=own(rows.cycles),
        tool_calls=own(rows.tool_calls),
        messages=own(rows.messages),
        events=[row for row in rows.events if row["seq"] > forked.prefix_len],
        operator=own(rows.operator),
        memory=own(rows.memory),
    )
