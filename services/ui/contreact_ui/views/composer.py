"""The config composer's page: a form that composes a run config or an experiment
file. Nothing is stored: the form's values travel in the query."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from contreact_events.catalog.run import RunRequested
from contreact_events.config import RunConfig
from contreact_events.config.hosts import without_credentials
from contreact_events.wire.codec import event_from_json
from contreact_ui.composer.form import COMPOSERS, compose
from contreact_ui.exceptions import RunNotProjected
from contreact_ui.models import ComposePage
from contreact_ui.views.runs import run_row


def compose_page(
    mode: str, values: Mapping[str, str], query: str, *, started_from: str | None = None
) -> ComposePage:
    """The page for ``values`` (the query without ``mode``); ``query`` is the request's
    whole query, passed on to the download link (given only for a valid config, which
    holds no credentials); ``started_from`` the run whose config the values are. A host
    with credentials is refused, and shown back without them."""
    sent = bool(values)
    composed = compose(mode, values)
    download = f"/compose.yaml?{query}" if composed.yaml and sent else None
    return ComposePage(
        mode=mode,
        modes=list(COMPOSERS),
        command=COMPOSERS[mode].command,
        values={k: without_credentials(v) for k, v in composed.values.items()},
        yaml=composed.yaml if sent else None,
        error=composed.error if sent else None,
        download=download,
        filename=composed.filename,
        started_from=started_from,
    )


def run_config(conn: sqlite3.Connection, run_id: str) -> RunConfig:
    """A run's config as submitted (its ``RunRequested``, upcast to today's shape)."""
    row = conn.execute(
        "SELECT payload FROM events WHERE run_id = ? AND type = 'RunRequested' "
        "ORDER BY seq LIMIT 1",
        (run_id,),
    ).fetchone()
    if row is None:
        run_row(conn, run_id)  # 404 when there is no such run
        raise RunNotProjected(f"run {run_id} has no RunRequested in its log: nothing to start from")
    event = event_from_json(bytes(row["payload"]))
    assert isinstance(event, RunRequested)
    return event.config
