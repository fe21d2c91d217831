"""The projection store: the dashboard's read models in one SQLite file (WAL mode).

One writer (the follower of the ui service, or ``contreact-ui --rebuild``), any number
of readers (the pages, each request on its own read-only connection). A delta and the
log position it reaches are written in one transaction. ``meta`` holds the projection
version the tables were built for and a generation that changes on every rebuild, so
a running follower notices a rebuild made by another process and reloads.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from contreact_events.core.state import TERMINAL_STATUSES
from contreact_events.diversity.search_texts import fold_case
from contreact_ui.exceptions import ProjectionVersionMismatch
from contreact_ui.projection.tables import (
    FORKS_INDEX,
    METRIC_FIELDS,
    SCHEMA,
    SETTINGS_INDEX,
    STORE_VERSION,
    SUMMARY_FIELDS,
    TABLES,
)
from contreact_ui.read_models import Delta

BUSY_TIMEOUT_MS = 10_000


CYCLE_INSERT = (
    "INSERT OR REPLACE INTO cycles (run_id, cycle, started_at, ended_at, ended_by, "
    f"advisory, advisory_level, {', '.join(METRIC_FIELDS)}, tools, reflection, "
    "reflection_complete, level, max_similarity, most_similar_cycle, advisory_given, "
    f"note, topic_exhausted) VALUES ({', '.join('?' * (16 + len(METRIC_FIELDS)))})"
)

FOLD_INSERT = (
    "INSERT OR IGNORE INTO text_folds (run_id, seq, kind, label, folded) VALUES (?, ?, ?, ?, ?)"
)


def _ts(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def connect(path: Path) -> sqlite3.Connection:
    """A writer's connection (creates the file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: a rebuild writes many pages
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A reader's connection: SQLite itself refuses any write through it."""
    conn = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only = 1")
    conn.row_factory = sqlite3.Row
    return conn


class ProjectionStore:
    """The writer's side of the store."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> ProjectionStore:
        """Open the store; refuse one built for another projection version (the
        caller rebuilds). An empty file gets the current schema."""
        conn = connect(path)
        store = cls(conn, path)
        found = store.version()
        if found is None and create:
            store.create()
        elif found != STORE_VERSION:
            conn.close()
            raise ProjectionVersionMismatch(
                f"{path} holds projections of version {found}, this code builds "
                f"{STORE_VERSION}: rebuild them with `contreact-ui --rebuild`"
            )
        else:
            conn.execute(FORKS_INDEX)
            conn.execute(SETTINGS_INDEX)
        return store

    def close(self) -> None:
        self.conn.close()

    def version(self) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        except sqlite3.OperationalError:
            return None
        return str(row[0]) if row else None

    def generation(self) -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return str(row[0]) if row else ""

    def create(self) -> None:
        with self.transaction() as conn:
            for table in TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('version', ?), ('generation', ?)",
                (STORE_VERSION, uuid.uuid4().hex),
            )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def apply(self, delta: Delta, *, source: str = "redis") -> None:
        """Write one delta and the log position it reaches, in one transaction."""
        with self.transaction() as conn:
            _write_delta(conn, delta, source, index=True)

    def apply_many(self, deltas: list[tuple[Delta, str]], *, index: bool = True) -> None:
        """Write several deltas in one transaction; ``index=False`` leaves their texts
        out of the trigram index (a rebuild fills it once at the end: ``reindex_texts``)."""
        with self.transaction() as conn:
            for delta, source in deltas:
                _write_delta(conn, delta, source, index=index)

    def reindex_texts(self) -> None:
        """The trigram index made again from every folded text, in one statement: much
        cheaper than a row at a time while a rebuild writes 60,000 texts."""
        with self.transaction() as conn:
            conn.execute("INSERT INTO text_index (text_index) VALUES ('delete-all')")
            conn.execute("INSERT INTO text_index (rowid, folded) SELECT id, folded FROM text_folds")

    def set_problem(self, run_id: str, *, status: str | None, error: str) -> None:
        """A run that cannot be projected (or is quarantined): shown with the reason,
        no longer followed."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, status, phase, model, resolved_model, backend, "
                "experiment, cycle, cycle_count, step, llm_calls, prompt_tokens, "
                "completion_tokens, llm_seconds, events, memory_keys, waiting_task, "
                "failure_reason, projection_error, terminal) "
                "VALUES (?, ?, 'new', '', '', '', '', 0, 0, 0, 0, 0, 0, 0.0, 0, 0, '', '', ?, 1) "
                "ON CONFLICT (run_id) DO UPDATE SET projection_error = excluded.projection_error,"
                " status = coalesce(?, runs.status), terminal = 1",
                (run_id, status or "unreadable", error, status),
            )

    def replace_run(self, run_id: str, delta: Delta | None, *, source: str) -> tuple[str, str]:
        """Put ``delta`` (a run projected again from the start; None: nothing) in place of
        every row the run had, in one transaction, and give the store a new generation
        (the snapshots at the run's positions may have changed: the replay page's cache
        is keyed by it). Returns the generations before and after."""
        with self.transaction() as conn:
            before = self.generation()
            conn.executemany(
                "INSERT INTO text_index (text_index, rowid, folded) VALUES ('delete', ?, ?)",
                conn.execute(
                    "SELECT id, folded FROM text_folds WHERE run_id = ?", (run_id,)
                ).fetchall(),
            )
            for table in TABLES:
                if table != "text_index":
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            if delta is not None and not delta.empty:
                _write_delta(conn, delta, source, index=True)
            after = uuid.uuid4().hex
            conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (after,))
        return before, after

    def run_rows(self) -> dict[str, tuple[bool, str | None, str]]:
        """run id -> (finished or given up, last entry id, source)."""
        rows = self.conn.execute("SELECT run_id, terminal, last_entry_id, source FROM runs")
        return {r[0]: (bool(r[1]), r[2], r[3]) for r in rows}

    def event_payloads(self, run_id: str) -> list[tuple[str | None, bytes]]:
        rows = self.conn.execute(
            "SELECT entry_id, payload FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [(r[0], bytes(r[1])) for r in rows]


def _write_delta(conn: sqlite3.Connection, delta: Delta, source: str, *, index: bool) -> None:
    run_id = delta.run_id
    s = delta.summary
    values: dict[str, Any] = {name: getattr(s, name) for name in SUMMARY_FIELDS}
    values["memory_keys"] = delta.memory_keys
    values["created_at"] = _ts(delta.created_at)
    values["updated_at"] = _ts(delta.updated_at)
    values["last_entry_id"] = delta.last_entry_id
    values["source"] = source
    values["terminal"] = int(s.status in TERMINAL_STATUSES)
    columns = ", ".join(values)
    updates = ", ".join(f"{c} = excluded.{c}" for c in values if c != "run_id")
    conn.execute(
        f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(values))}) "
        f"ON CONFLICT (run_id) DO UPDATE SET {updates}",
        tuple(values.values()),
    )
    conn.executemany(
        CYCLE_INSERT,
        [
            (
                run_id,
                row.cycle,
                _ts(row.started_at),
                _ts(row.ended_at),
                row.ended_by,
                row.advisory,
                row.advisory_level,
                *(getattr(row.metrics, name) for name in METRIC_FIELDS),
                _json_counts(row.tools),
                row.reflection,
                int(row.reflection_complete),
                row.level,
                row.max_similarity,
                row.most_similar_cycle,
                row.advisory_given,
                row.note,
                int(row.topic_exhausted),
            )
            for row in delta.cycles.values()
        ],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO similarities VALUES (?, ?, ?, ?)",
        [(run_id, c, o, v) for c, o, v in delta.similarities],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO memory_changes VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(run_id, m.seq, m.cycle, m.key, m.change, m.value, m.written_by) for m in delta.memory],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO operator VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                o.task_id,
                o.cycle,
                o.message,
                _ts(o.sent_at),
                o.reply,
                o.replied_by,
                _ts(o.replied_at),
                o.sent_seq,
                o.replied_seq,
                o.analysis_requested,
                o.analysis_requested_seq,
                o.analysis.model_dump_json() if o.analysis is not None else None,
                o.analysis_seq,
            )
            for o in delta.operator.values()
        ],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                a.cycle,
                a.attempt,
                a.text,
                a.similarity,
                int(a.is_unique),
                a.feedback,
                a.matches,
                a.paragraphs,
                a.outcome,
            )
            for a in delta.attempts.values()
        ],
    )
    conn.executemany("INSERT OR REPLACE INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", delta.events)
    conn.executemany(
        "INSERT OR REPLACE INTO cycle_marks VALUES (?, ?, ?, ?, ?)",
        [
            (
                run_id,
                cycle,
                m.start_seq,
                int(m.embedded),
                orjson.dumps(m.band).decode() if m.band is not None else None,
            )
            for cycle, m in delta.marks.items()
        ],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO history_cuts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(run_id, *astuple(c)) for c in delta.cuts.values()],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)",
        [(run_id, s.seq, s.cycle, s.state) for s in delta.snapshots],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO texts VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                t.seq,
                t.kind,
                t.label,
                t.cycle,
                t.text,
                vector_bytes(t.vector) if t.vector is not None else None,
            )
            for t in delta.texts
        ],
    )
    folds = [(run_id, t.seq, t.kind, t.label, fold_case(t.text)) for t in delta.texts]
    if not index:  # a rebuild: the index is made from every folded text at the end
        conn.executemany(FOLD_INSERT, folds)
        return
    for fold in folds:  # a text seen before (a reflection again, with its vector): kept
        cursor = conn.execute(FOLD_INSERT, fold)
        if cursor.rowcount == 1:
            conn.execute(
                "INSERT INTO text_index (rowid, folded) VALUES (?, ?)", (cursor.lastrowid, fold[-1])
            )


def vector_bytes(vector: tuple[float, ...]) -> bytes:
    """A logged embedding as stored: little-endian float32 (numpy reads it back)."""
    return np.asarray(vector, dtype="<f4").tobytes()


def _json_counts(counts: dict[str, int]) -> str:
    return orjson.dumps(counts, option=orjson.OPT_SORT_KEYS).decode()
