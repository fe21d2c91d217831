"""Memory as it stood at the end of a cycle, or after any event (for replay)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from contreact_ui.exceptions import BadQuery
from contreact_ui.models import MemoryEntry, MemoryPage
from contreact_ui.views.runs import run_row


def memory_page(conn: sqlite3.Connection, run_id: str, cycle: int | None) -> MemoryPage:
    run = run_row(conn, run_id)
    cycles = [
        r[0]
        for r in conn.execute("SELECT cycle FROM cycles WHERE run_id = ? ORDER BY cycle", (run_id,))
    ]
    shown = cycle if cycle is not None else (cycles[-1] if cycles else 0)
    if shown < 0 or (cycles and shown > cycles[-1]) or (not cycles and shown != 0):
        raise BadQuery(f"run {run_id} has cycles 1 to {run.cycle}: cycle={shown} does not exist")
    changes = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memory_changes WHERE run_id = ? AND cycle <= ? ORDER BY seq",
        (run_id, shown),
    ).fetchall()
    entries = memory_entries(changes, shown, upto_seq=None)
    return MemoryPage(
        run_id=run_id,
        cycle=shown,
        cycles=cycles,
        entries=entries,
        keys=sum(1 for e in entries if e.change != "deleted"),
    )


MEMORY_COLUMNS = "seq, cycle, key, change, value, written_by"
"""What ``memory_entries`` reads of each ``memory_changes`` row, in this order."""


def memory_entries(
    changes: Sequence[sqlite3.Row | tuple[Any, ...]], cycle: int, *, upto_seq: int | None
) -> list[MemoryEntry]:
    """Memory after the given changes (``MEMORY_COLUMNS``, log order), with what happened
    to each key in ``cycle``: compared with memory as it stood when the cycle began. An
    entry is persistent when the platform's memory policy made its last change (the
    change's provenance, not the key's prefix: an agent may write ``persistent/x`` in a
    run without the policy)."""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    last: dict[str, int] = {}
    writer: dict[str, str] = {}
    for seq, change_cycle, key, change, value, written_by in changes:
        if upto_seq is not None and seq > upto_seq:
            break
        for target in (after, before) if change_cycle < cycle else (after,):
            if change == "deleted":
                target.pop(key, None)
            else:
                target[key] = value
        last[key] = change_cycle
        writer[key] = written_by
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.append(
                MemoryEntry(
                    key=key,
                    value=None,
                    change="deleted",
                    last_changed_cycle=last[key],
                    persistent=writer[key] == "platform",
                )
            )
            continue
        kind = None
        if key not in before:
            kind = "added"
        elif before[key] != after[key]:
            kind = "changed"
        out.append(
            MemoryEntry(
                key=key,
                value=after[key],
                change=kind,
                last_changed_cycle=last[key],
                persistent=writer[key] == "platform",
            )
        )
    return out
