"""A run's downloads: its log as stored, seed 003's LogRecords, its metrics per cycle."""

from __future__ import annotations

import orjson
from fastapi import APIRouter
from fastapi.responses import Response

from contreact_events.exceptions import ContReActEventError
from contreact_events.history.export import export_records
from contreact_events.wire.codec import event_from_json
from contreact_ui.deps import Conn, RunId
from contreact_ui.exceptions import BadQuery
from contreact_ui.routes.registry import download, download_responses
from contreact_ui.views import events as event_views
from contreact_ui.views import run as run_views

router = APIRouter()


@router.get(
    "/runs/{run_id}/events.jsonl",
    response_class=Response,
    responses=download_responses("application/x-ndjson", "the run log"),
)
def events_jsonl(conn: Conn, run_id: RunId) -> Response:
    """The run log, one event per line, as the archive holds it."""
    lines = event_views.events_jsonl(conn, run_id)
    return download(b"".join(lines), "application/x-ndjson", f"{run_id}.events.jsonl")


@router.get(
    "/runs/{run_id}/export.jsonl",
    response_class=Response,
    responses=download_responses("application/x-ndjson", "seed-003 LogRecords"),
)
def export_jsonl(conn: Conn, run_id: RunId) -> Response:
    """Seed 003's LogRecords (what `contreact export` writes): a download, rebuilt
    by folding the stored log."""
    raw = event_views.events_jsonl(conn, run_id)
    try:
        records = export_records([event_from_json(line) for line in raw])
        body = b"".join(orjson.dumps(r) + b"\n" for r in records)
    except ContReActEventError as exc:
        raise BadQuery(f"run {run_id} cannot be exported: {exc}") from None
    return download(body, "application/x-ndjson", f"{run_id}.jsonl")


@router.get(
    "/runs/{run_id}/cycles.csv",
    response_class=Response,
    responses=download_responses("text/csv", "metrics per cycle"),
)
def cycles_csv(conn: Conn, run_id: RunId) -> Response:
    """Per-cycle metrics as CSV."""
    return download(run_views.cycles_csv(conn, run_id), "text/csv", f"{run_id}.cycles.csv")
