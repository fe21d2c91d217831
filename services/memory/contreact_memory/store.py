"""The agent's key-value memory on SQLite: the five memory tools, isolated by run id,
each task applied exactly once.

Tool results (what the model reads back; ``ok`` is False for an error):

- ``write(key, value)``: ``Saved under key 'K'.``, or
  ``Saved under key 'K' (the previous value was replaced).`` when the key existed.
- ``read(key)``: the stored value itself, verbatim; a missing key gives
  ``Error: no memory under key 'K'. Use list() to see the keys.`` (ok False).
- ``list()``: the run's keys sorted by code point, joined with ``", "``; with no key,
  ``Memory is empty.``
- ``delete(key)``: ``Deleted key 'K'.``; a missing key gives
  ``Error: no memory under key 'K' to delete. Use list() to see the keys.`` (ok False).
- ``pattern_search(pattern)``: the keys containing ``pattern`` as a plain,
  case-sensitive substring (no regex, no LIKE wildcards), sorted and joined with
  ``", "``; none gives ``No keys contain 'P'.`` The empty pattern matches every key.
- With the memory policy on (``MemoryTask.reserved_prefix``), ``write`` and ``delete``
  of a key under the prefix give ``cognition.policy.reserved_key_problem``'s error
  (ok False): the rule, and that read, list and pattern_search see those keys.
- ``persist`` (the memory policy's task, not an agent tool): ``Kept under key 'K'.``;
  only under ``cognition.policy.PERSISTENT_PREFIX``.
- An unknown tool or missing, unexpected or non-text arguments give the message of
  ``contreact_events.core.tools.check_arguments`` (ok False); an empty key gives
  ``Error: the key must not be empty. Usage: tool(...).``; text that is not valid
  Unicode (unpaired surrogates) gives ``Error: argument 'A' is not valid Unicode text.``

Exactly once: ``apply`` looks the task id up in ``processed_tasks``, and when it is
new runs the tool and records its result in the same transaction (``BEGIN
IMMEDIATE``, so two processes sharing the file cannot both apply it). A repeat is
answered with the recorded result and changes nothing; tool errors are recorded
too, so a repeat answers the same.

The store is a projection of the run logs: ``updated_at`` is the request time
carried by the task (``MemoryTask.ts``), never the wall clock, so replaying the
logged calls (``contreact_memory.rebuild``) gives byte-identical rows.

Blocking: every method does synchronous SQLite I/O; the async handler calls
``apply`` through ``asyncio.to_thread``. Each thread gets its own connection.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeAlias

from contreact_events.cognition.policy import (
    PERSISTENT_PREFIX,
    POLICY_TOOL,
    is_persistent_key,
    reserved_key_problem,
)
from contreact_events.core.tools import TOOL_SPECS, check_arguments
from contreact_events.history.memory_calls import MemoryCall
from contreact_events.wire.tasks import MemoryTask
from contreact_memory.exceptions import StoreUnavailable, ToolError

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_memory (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS processed_tasks (
    task_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    output TEXT NOT NULL,
    ok INTEGER NOT NULL
);
"""

BUSY_TIMEOUT_S = 30.0

MemoryRow: TypeAlias = tuple[str, str, str, str]
"""(run_id, key, value, updated_at) of one stored entry."""


@dataclass(frozen=True)
class ToolOutcome:
    """A tool call's result as given back to the model."""

    output: str
    ok: bool


def timestamp(ts: datetime) -> str:
    """The stored form of a request time: UTC ISO 8601 with microseconds."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC)
    return ts.isoformat(timespec="microseconds")


class MemoryStore:
    """One SQLite file (WAL mode) holding every run's memory and processed tasks."""

    def __init__(self, path: Path) -> None:
        """Use ``MemoryStore.open``: it creates the file and its schema."""
        self.path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []

    @classmethod
    def open(cls, path: Path | str, *, create: bool = True) -> MemoryStore:
        """Open (and with ``create``, create) the store at ``path``, WAL mode on."""
        path = Path(path)
        if not create and not path.exists():
            raise StoreUnavailable(f"no memory store at {path}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            store = cls(path)
            store._connection().executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailable(f"cannot open the memory store at {path}: {exc}") from None
        return store

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection (call once nothing uses the store)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def journal_mode(self) -> str:
        row = self._connection().execute("PRAGMA journal_mode").fetchone()
        return str(row[0])

    def apply(self, task: MemoryTask) -> ToolOutcome:
        """Run the task's tool once; a task id seen before gets its recorded result."""
        with self._transaction() as conn:
            return _apply(conn, task)

    def seed(self, task: MemoryTask, calls: Sequence[MemoryCall]) -> ToolOutcome:
        """A fork's memory seed (``task``, tool ``seed``): apply the memory calls of its
        copied prefix (already re-keyed to the fork: its task ids, its run id) exactly as
        ``apply`` would have, all in one transaction with the seed's own processed mark,
        so a crash leaves none of them and a repeat changes nothing. Not ok when a
        replayed result differs from the logged one (the fork's memory was not empty)."""
        with self._transaction() as conn:
            seen = _recorded(conn, task.task_id)
            if seen is not None:
                return seen
            differ = []
            for call in calls:
                outcome = _apply(conn, call.task)
                if (outcome.output, outcome.ok) != (call.result.output, call.result.ok):
                    differ.append(f"{call.task.task_id} ({call.task.tool}) answers otherwise")
            text = f"Seeded {len(calls)} memory call(s)."
            if differ:
                text = f"{len(differ)} replayed call(s) differ from the log: {differ[0]}"
            outcome = ToolOutcome(output=text, ok=not differ)
            _mark(conn, task, outcome)
            return outcome

    def recorded(self, task_id: str) -> ToolOutcome | None:
        """The result recorded for a processed task, if any."""
        row = (
            self._connection()
            .execute("SELECT output, ok FROM processed_tasks WHERE task_id = ?", (task_id,))
            .fetchone()
        )
        return None if row is None else ToolOutcome(output=row[0], ok=bool(row[1]))

    def dump(self, run_id: str | None = None) -> list[MemoryRow]:
        """Every stored entry (of one run, or all), ordered by run id then key."""
        conn = self._connection()
        if run_id is None:
            rows = conn.execute(
                "SELECT run_id, key, value, updated_at FROM agent_memory ORDER BY run_id, key"
            ).fetchall()
        else:
            rows = conn.execute(
                "SELECT run_id, key, value, updated_at FROM agent_memory "
                "WHERE run_id = ? ORDER BY key",
                (run_id,),
            ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]


def _apply(conn: sqlite3.Connection, task: MemoryTask) -> ToolOutcome:
    seen = _recorded(conn, task.task_id)
    if seen is not None:
        return seen
    try:
        outcome = ToolOutcome(output=_run_tool(conn, task), ok=True)
    except ToolError as exc:
        outcome = ToolOutcome(output=str(exc), ok=False)
    _mark(conn, task, outcome)
    return outcome


def _recorded(conn: sqlite3.Connection, task_id: str) -> ToolOutcome | None:
    row = conn.execute(
        "SELECT output, ok FROM processed_tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    return None if row is None else ToolOutcome(output=row[0], ok=bool(row[1]))


def _mark(conn: sqlite3.Connection, task: MemoryTask, outcome: ToolOutcome) -> None:
    conn.execute(
        "INSERT INTO processed_tasks (task_id, run_id, tool, output, ok) VALUES (?, ?, ?, ?, ?)",
        (task.task_id, task.run_id, task.tool, outcome.output, int(outcome.ok)),
    )


def _run_tool(conn: sqlite3.Connection, task: MemoryTask) -> str:
    """The tool's output; raises ToolError for a call that cannot run as asked."""
    if task.tool == POLICY_TOOL:
        return _persist(conn, task)
    tool = _TOOLS.get(task.tool)
    problem = check_arguments(task.tool, task.arguments)
    if problem is None and tool is None:  # a valid tool that is not a memory tool
        problem = f"Error: {task.tool} is not a memory tool."
    if problem is not None or tool is None:
        raise ToolError(problem)
    args: dict[str, str] = task.arguments
    usage = f"Usage: {task.tool}({', '.join(p for p, _ in TOOL_SPECS[task.tool].params)})."
    for name, value in args.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            problem = f"Error: argument '{name}' is not valid Unicode text. {usage}"
            raise ToolError(problem) from None
    if "key" in args and not args["key"]:
        raise ToolError(f"Error: the key must not be empty. {usage}")
    reserved = task.reserved_prefix
    if reserved is not None and args.get("key", "").startswith(reserved):
        problem = reserved_key_problem(task.tool, args["key"])
        if problem is not None:
            raise ToolError(problem)
    return tool(conn, task, args)


def _persist(conn: sqlite3.Connection, task: MemoryTask) -> str:
    """The memory policy's store of a kept exchange (not an agent tool): a write under
    the reserved prefix, which the agent's own ``write`` may not make."""
    key, value = task.arguments.get("key"), task.arguments.get("value")
    if not isinstance(key, str) or not isinstance(value, str) or not is_persistent_key(key):
        raise ToolError(
            f"Error: {POLICY_TOOL} stores text under a key starting with "
            f"'{PERSISTENT_PREFIX}' (got key {key!r})."
        )
    existed = _value(conn, task.run_id, key) is not None
    _store(conn, task, key, value)
    if existed:
        return f"Kept under key '{key}' (the previous value was replaced)."
    return f"Kept under key '{key}'."


def _write(conn: sqlite3.Connection, task: MemoryTask, args: dict[str, str]) -> str:
    key = args["key"]
    existed = _value(conn, task.run_id, key) is not None
    _store(conn, task, key, args["value"])
    if existed:
        return f"Saved under key '{key}' (the previous value was replaced)."
    return f"Saved under key '{key}'."


def _store(conn: sqlite3.Connection, task: MemoryTask, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO agent_memory (run_id, key, value, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, "
        "updated_at = excluded.updated_at",
        (task.run_id, key, value, timestamp(task.ts)),
    )


def _read(conn: sqlite3.Connection, task: MemoryTask, args: dict[str, str]) -> str:
    key = args["key"]
    value = _value(conn, task.run_id, key)
    if value is None:
        raise ToolError(f"Error: no memory under key '{key}'. Use list() to see the keys.")
    return value


def _list(conn: sqlite3.Connection, task: MemoryTask, args: dict[str, str]) -> str:
    keys = _keys(conn, "SELECT key FROM agent_memory WHERE run_id = ? ORDER BY key", (task.run_id,))
    return ", ".join(keys) if keys else "Memory is empty."


def _delete(conn: sqlite3.Connection, task: MemoryTask, args: dict[str, str]) -> str:
    key = args["key"]
    deleted = conn.execute(
        "DELETE FROM agent_memory WHERE run_id = ? AND key = ?", (task.run_id, key)
    ).rowcount
    if not deleted:
        raise ToolError(
            f"Error: no memory under key '{key}' to delete. Use list() to see the keys."
        )
    return f"Deleted key '{key}'."


def _pattern_search(conn: sqlite3.Connection, task: MemoryTask, args: dict[str, str]) -> str:
    pattern = args["pattern"]
    # instr() is a literal, case-sensitive substring test: no regex, no LIKE wildcards.
    keys = _keys(
        conn,
        "SELECT key FROM agent_memory WHERE run_id = ? AND instr(key, ?) > 0 ORDER BY key",
        (task.run_id, pattern),
    )
    return ", ".join(keys) if keys else f"No keys contain '{pattern}'."


def _value(conn: sqlite3.Connection, run_id: str, key: str) -> str | None:
    row = conn.execute(
        "SELECT value FROM agent_memory WHERE run_id = ? AND key = ?", (run_id, key)
    ).fetchone()
    return None if row is None else str(row[0])


def _keys(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[str]:
    return [str(row[0]) for row in conn.execute(sql, params).fetchall()]


_TOOLS: dict[str, Callable[[sqlite3.Connection, MemoryTask, dict[str, str]], str]] = {
    "write": _write,
    "read": _read,
    "list": _list,
    "delete": _delete,
    "pattern_search": _pattern_search,
}
