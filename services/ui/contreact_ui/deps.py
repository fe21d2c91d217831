"""Dependencies of the routes, as ``Annotated`` aliases."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from pydantic import StringConstraints

from contreact_events.config import RUN_ID_PATTERN
from contreact_events.config.run_places import ForkView
from contreact_ui.exceptions import StoreUnavailable
from contreact_ui.projection.snapshots import SnapshotCache
from contreact_ui.projection.store import connect_readonly
from contreact_ui.settings import UISettings

MAX_POSITION = 1_000_000_000
"""Upper bound of positions and offsets in queries (SQLite integers are 64-bit)."""


@contextmanager
def open_readonly(settings: UISettings) -> Iterator[sqlite3.Connection]:
    path = settings.database
    if not path.exists():
        raise StoreUnavailable(
            f"no projections at {path} yet: the ui service creates them when it starts "
            "(`contreact up`, or `contreact-ui --rebuild` to build them from the logs)"
        )
    conn = connect_readonly(path)
    try:
        yield conn
    finally:
        conn.close()


def store_connection(request: Request) -> Iterator[sqlite3.Connection]:
    """A read-only connection for one request (SQLite refuses writes through it)."""
    with open_readonly(request.app.state.settings) as conn:
        yield conn


Conn = Annotated[sqlite3.Connection, Depends(store_connection)]
RunId = Annotated[
    str,
    Path(
        pattern=RUN_ID_PATTERN.pattern,
        max_length=128,
        description="a run id: letters, digits, '.', '_' or '-', starting with a letter or digit",
    ),
]
RunIdItem = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN.pattern, max_length=128)]
Forks = Annotated[
    ForkView | None,
    Query(
        description="an experiment's forks: none (left out; the default), as-rows (each a "
        "row of its own, 'A -> B at K'), only (runs picked by id: as-rows)"
    ),
]
"""A run id inside a query list (``?run=A&run=B``)."""
Seq = Annotated[int, Path(ge=0, le=10_000_000, description="position of the event in the log")]


def snapshot_cache(request: Request) -> SnapshotCache:
    found: SnapshotCache = request.app.state.snapshots
    return found


Snapshots = Annotated[SnapshotCache, Depends(snapshot_cache)]
"""The app's decoded snapshots (the replay page)."""
