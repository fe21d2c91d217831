"""The agent's state after any event, folded from the nearest snapshot."""

from __future__ import annotations

import sqlite3

from contreact_events.core.fold import fold
from contreact_events.core.prompt import prompt_messages
from contreact_events.wire.codec import bulk, event_from_json
from contreact_ui.exceptions import BadQuery
from contreact_ui.models import MemoryEntry, PromptMessage, ReplayPage
from contreact_ui.projection.snapshots import SnapshotCache
from contreact_ui.views.events import EVENT_COLUMNS, event_view
from contreact_ui.views.memory import MEMORY_COLUMNS, memory_entries
from contreact_ui.views.operator import operator_exchanges
from contreact_ui.views.runs import run_row

EXCHANGES_SHOWN = 10
"""Operator exchanges shown (the latest by the position shown; the run page has all)."""
MEMORY_SHOWN = 100
"""Memory keys shown unless all are asked for: those changed in the cycle shown and the
latest changed before (a long run's memory is thousands of keys; the memory page, by
cycle, shows them all)."""
PROMPT_SHOWN = 60
"""Messages of a long conversation shown unless all are asked for (after the system
prompt): a 1,000-cycle run's conversation is thousands."""


def replay_page(
    conn: sqlite3.Connection,
    run_id: str,
    seq: int | None,
    cycle: int | None,
    all_messages: bool = False,
    all_memory: bool = False,
    *,
    snapshots: SnapshotCache,
) -> ReplayPage:
    """The fold's state after ``seq`` events: from the nearest snapshot before it,
    folding at most ``SNAPSHOT_EVERY`` cycles of stored events."""
    run = run_row(conn, run_id)
    starts = [
        [r[0], r[1]]
        for r in conn.execute(
            "SELECT cycle, start_seq FROM cycle_marks WHERE run_id = ? AND start_seq IS NOT NULL "
            "ORDER BY start_seq",
            (run_id,),
        )
    ]
    if cycle is not None:
        match = [s for c, s in starts if c == cycle]
        if not match:
            raise BadQuery(f"run {run_id} has no cycle {cycle} (it has {len(starts)})")
        seq = match[0]
    at = run.events if seq is None else seq
    if at < 0 or at > run.events:
        raise BadQuery(f"run {run_id} has events 0 to {run.events}: seq={at} is outside")
    state = snapshots.nearest(conn, run_id, at)
    tail = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
        (run_id, state.seq, at),
    ).fetchall()
    with bulk():
        for (payload,) in tail:
            state = fold(state, event_from_json(bytes(payload)))
    event_row = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND seq = ?", (run_id, at)
    ).fetchone()
    changes = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memory_changes WHERE run_id = ? AND seq <= ? ORDER BY seq",
        (run_id, at),
    ).fetchall()
    messages = list(prompt_messages(state)) if state.config else []
    total = len(messages)
    if not all_messages and total > PROMPT_SHOWN + 1:
        messages = [messages[0], *messages[-PROMPT_SHOWN:]]
    prompt = [
        PromptMessage(
            role=m.role,
            content=m.content,
            tool_calls=[c.model_dump(mode="json") for c in m.tool_calls],
            tool_name=m.tool_name,
        )
        for m in messages
    ]
    pending = state.pending_task_id
    entries = memory_entries(changes, state.cycle_number, upto_seq=at)
    memory = entries if all_memory else latest_entries(entries, MEMORY_SHOWN)
    operator, operator_total = operator_exchanges(conn, run_id, upto_seq=at, latest=EXCHANGES_SHOWN)
    return ReplayPage(
        run_id=run_id,
        seq=at,
        total=run.events,
        event=event_view(event_row) if event_row else None,
        status=state.listed_status,
        phase=state.phase,
        cycle=state.cycle_number,
        step=state.step,
        advisory=state.advisory,
        next_advisory=state.next_advisory,
        memory=memory,
        memory_total=len(entries),
        prompt=prompt,
        prompt_total=total,
        prompt_is_next=state.phase in ("calling", "awaiting_llm"),
        metrics=state.metrics,
        cycle_metrics=list(state.cycle_metrics),
        pending_task=pending,
        cycle_starts=starts,
        operator=operator,
        operator_total=operator_total,
    )


def latest_entries(entries: list[MemoryEntry], limit: int) -> list[MemoryEntry]:
    """The ``limit`` entries changed last (this cycle's changes first), in key order."""
    if len(entries) <= limit:
        return entries
    ranked = sorted(
        entries, key=lambda e: (e.change is not None, e.last_changed_cycle), reverse=True
    )
    keep = {e.key for e in ranked[:limit]}
    return [e for e in entries if e.key in keep]
