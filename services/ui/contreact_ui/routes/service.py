"""The service's own routes: health, the live-update stream (server-sent events) and
plotly.js from the installed package."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from functools import cache
from importlib import resources
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, Response, StreamingResponse
from pydantic import TypeAdapter

from contreact_ui.deps import Conn, RunIdItem, open_readonly
from contreact_ui.models import Health, RunRow
from contreact_ui.projection.follower import Notifier
from contreact_ui.projection.tables import STORE_VERSION
from contreact_ui.settings import UISettings
from contreact_ui.views.runs import run_rows

router = APIRouter()
RUN_ROWS = TypeAdapter(list[RunRow])


@router.get("/health.json")
def health(conn: Conn) -> Health:
    """The projection version and how many runs the store holds."""
    count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    following = conn.execute("SELECT count(*) FROM runs WHERE terminal = 0").fetchone()[0]
    return Health(ok=True, projection_version=STORE_VERSION, runs=count, following=following)


@router.get("/stream", include_in_schema=False)
async def stream(
    request: Request, run: Annotated[list[RunIdItem] | None, Query()] = None
) -> StreamingResponse:
    """Server-sent events: ``change`` with the rows of the runs that changed (only
    ``run`` when given), so the open page updates without a reload."""
    wanted = set(run or [])
    state = request.app.state
    return StreamingResponse(
        changes(request, state.notifier, wanted, state.settings),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


PLOTLY_HEADERS = {"Cache-Control": "public, max-age=86400", "Vary": "Accept-Encoding"}


@router.get("/static/plotly.min.js", include_in_schema=False)
def plotly_js(request: Request) -> Response:
    """plotly.js from the installed plotly package, never a CDN: compressed once (4.8 MB
    as shipped, about a third of that gzipped) and kept, for browsers that take gzip."""
    if "gzip" in request.headers.get("accept-encoding", "").lower():
        return Response(
            plotly_gzipped(),
            media_type="text/javascript",
            headers={**PLOTLY_HEADERS, "Content-Encoding": "gzip"},
        )
    return FileResponse(plotly_path(), media_type="text/javascript", headers=PLOTLY_HEADERS)


def plotly_path() -> Any:
    return resources.files("plotly").joinpath("package_data", "plotly.min.js")


@cache
def plotly_gzipped() -> bytes:
    return gzip.compress(plotly_path().read_bytes(), compresslevel=9, mtime=0)


async def changes(
    request: Request, notifier: Notifier, wanted: set[str], settings: UISettings
) -> AsyncIterator[str]:
    seen = notifier.generation
    yield f"retry: 2000\nevent: hello\ndata: {orjson.dumps({'generation': seen}).decode()}\n\n"
    while not await request.is_disconnected():
        now = await notifier.wait(seen, settings.keepalive_s)
        if now == seen:
            yield ": keepalive\n\n"
            continue
        changed = notifier.since(seen)
        seen = now
        if changed is not None and wanted:
            changed &= wanted
        if changed is not None and not changed:
            continue
        rows = await asyncio.to_thread(_rows, settings, changed, wanted)
        body = orjson.dumps(
            {
                "generation": now,
                "everything": changed is None,
                "runs": RUN_ROWS.dump_python(rows, mode="json"),
            }
        ).decode()
        yield f"event: change\ndata: {body}\n\n"


def _rows(settings: UISettings, changed: set[str] | None, wanted: set[str]) -> list[RunRow]:
    ids = sorted(changed if changed is not None else wanted)
    if not ids:
        return []
    with open_readonly(settings) as conn:
        return run_rows(conn, ids)
