"""The dashboard's routes. Read-only: every route is a GET, and the store is opened
read-only for each request.

Every page is one view function registered twice (``pages.page``): at ``PATH.json``
it answers the page's pydantic model as JSON (documented in the OpenAPI document), at
``PATH`` the same model rendered as HTML. A page cannot show one thing and serve
another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles

from contreact_events.core.export import export_records
from contreact_events.exceptions import ContReActEventError
from contreact_ui import views
from contreact_ui.config_composer import COMPOSERS, compose, form_groups
from contreact_ui.deps import Conn, RunId, RunIdItem, Seq, open_readonly
from contreact_ui.exceptions import BadQuery, RunNotProjected, StoreUnavailable
from contreact_ui.models import (
    ComparePage,
    ComposePage,
    EventDetail,
    EventFilters,
    EventsPage,
    Health,
    MemoryPage,
    ReplayPage,
    RunFilters,
    RunPage,
    RunRow,
    RunsPage,
)
from contreact_ui.pages import Pages, download, download_responses
from contreact_ui.follower import Notifier
from contreact_ui.render import Renderer
from contreact_ui.settings import UISettings
from contreact_ui.store import STORE_VERSION

MAX_POSITION = 1_000_000_000
"""Upper bound of positions and offsets in queries (SQLite integers are 64-bit)."""

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "style-src 'self' 'unsafe-inline'; font-src 'self'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
"""Scripts only from this server (no inline script runs); Plotly sets inline styles."""


def create_app(settings: UISettings, notifier: Notifier | None = None) -> FastAPI:
    app = FastAPI(
        title="ContReAct dashboard",
        version=STORE_VERSION,
        description=(
            "Read-only views of ContReAct runs. Every page at PATH has its data as JSON "
            "at PATH.json; this document describes the JSON."
        ),
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.notifier = notifier or Notifier()
    renderer = Renderer()
    pages = Pages(app, renderer)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.exception_handler(RunNotProjected)
    async def not_found(request: Request, exc: RunNotProjected) -> Response:
        return pages.error(request, 404, str(exc))

    @app.exception_handler(StoreUnavailable)
    async def unavailable(request: Request, exc: StoreUnavailable) -> Response:
        return pages.error(request, 503, str(exc))

    @app.exception_handler(BadQuery)
    async def bad_query(request: Request, exc: BadQuery) -> Response:
        return pages.error(request, 400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        if request.url.path.endswith(".json"):
            return JSONResponse({"detail": jsonable_errors(exc)}, status_code=422)
        return pages.error(request, 422, describe_invalid(exc))

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/runs")

    @pages.page(
        "/runs", "runs.html", embed=lambda page: {"filters": page.filters.model_dump(mode="json")}
    )
    def runs(
        conn: Conn,
        status: str | None = None,
        model: str | None = None,
        backend: str | None = None,
        experiment: str | None = None,
        q: Annotated[str | None, Query(description="part of the run id")] = None,
        limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
        offset: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
    ) -> RunsPage:
        """Every run with its status, model, backend, experiment, cycle, step and tokens."""
        filters = RunFilters(
            status=status,
            model=model,
            backend=backend,
            experiment=experiment,
            q=q,
            limit=limit,
            offset=offset,
        )
        return views.runs_page(conn, filters)

    @pages.page("/runs/{run_id}", "run.html")
    def run(conn: Conn, run_id: RunId) -> RunPage:
        """One run: per-cycle metrics, similarity, reflections, operator, regenerations."""
        return views.run_page(conn, run_id)

    @pages.page("/runs/{run_id}/memory", "memory.html")
    def memory(
        conn: Conn,
        run_id: RunId,
        cycle: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
    ) -> MemoryPage:
        """Memory as it stood at the end of a cycle (default: the last one)."""
        return views.memory_page(conn, run_id, cycle)

    @pages.page("/runs/{run_id}/events", "events.html")
    def events(
        conn: Conn,
        run_id: RunId,
        type: Annotated[list[str] | None, Query(description="event types to show")] = None,
        cycle: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
        after: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
        limit: Annotated[int, Query(ge=1, le=5000)] = 200,
    ) -> EventsPage:
        """The run log, filtered by type and cycle, a page at a time."""
        filters = EventFilters(type=type or [], cycle=cycle, after=after, limit=limit)
        return views.events_page(conn, run_id, filters)

    @pages.page("/runs/{run_id}/events/{seq}", "event.html")
    def event(conn: Conn, run_id: RunId, seq: Seq) -> EventDetail:
        """One event with its payload and the events of the same task."""
        return views.event_detail(conn, run_id, seq)

    @pages.page("/runs/{run_id}/replay", "replay.html")
    def replay(
        conn: Conn,
        run_id: RunId,
        seq: Annotated[int | None, Query(ge=0, le=MAX_POSITION)] = None,
        cycle: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    ) -> ReplayPage:
        """The agent's state as the fold has it after ``seq`` events (or at a cycle's start)."""
        return views.replay_page(conn, run_id, seq, cycle)

    @pages.page("/compare", "compare.html")
    def compare(
        conn: Conn,
        run: Annotated[list[RunIdItem] | None, Query(description="run ids to compare")] = None,
        model: Annotated[list[str] | None, Query(description="models to compare")] = None,
        experiment: str | None = None,
        by: Annotated[str | None, Query(pattern="^(model|run|experiment)$")] = None,
    ) -> ComparePage:
        """Runs or models side by side; Table 1 beside the paper's figures; Table 2."""
        return views.compare_page(
            conn, runs=run or [], models=model or [], experiment=experiment, by=by
        )

    @pages.page(
        "/compose",
        "compose.html",
        store=False,
        extras=lambda page: {
            "form_groups": form_groups(COMPOSERS[page.mode]),
        },
    )
    def composer(
        request: Request,
        mode: Annotated[str, Query(pattern=f"^({'|'.join(COMPOSERS)})$")] = "run",
    ) -> ComposePage:
        """A form that composes a run config or an experiment file; nothing is stored."""
        values = dict(request.query_params)
        values.pop("mode", None)
        sent = bool(values)
        composed = compose(mode, values)
        download = f"/compose.yaml?{request.url.query}" if composed.yaml and sent else None
        return ComposePage(
            mode=mode,
            modes=list(COMPOSERS),
            command=COMPOSERS[mode].command,
            values=composed.values,
            yaml=composed.yaml if sent else None,
            error=composed.error if sent else None,
            download=download,
            filename=composed.filename,
        )

    @app.get(
        "/compose.yaml",
        response_class=Response,
        responses=download_responses("application/yaml", "the composed config"),
    )
    def composed_yaml(
        request: Request,
        mode: Annotated[str, Query(pattern=f"^({'|'.join(COMPOSERS)})$")] = "run",
    ) -> Response:
        """The composed config as a file to download (400 with the reason if invalid)."""
        values = dict(request.query_params)
        values.pop("mode", None)
        composed = compose(mode, values)
        if composed.yaml is None:
            return PlainTextResponse(f"{composed.error}\n", status_code=400)
        return download(composed.yaml, "application/yaml", composed.filename)

    @app.get(
        "/runs/{run_id}/events.jsonl",
        response_class=Response,
        responses=download_responses("application/x-ndjson", "the run log"),
    )
    def events_jsonl(conn: Conn, run_id: RunId) -> Response:
        """The run log, one event per line, as the archive holds it."""
        lines = views.events_jsonl(conn, run_id)
        return download(b"".join(lines), "application/x-ndjson", f"{run_id}.events.jsonl")

    @app.get(
        "/runs/{run_id}/export.jsonl",
        response_class=Response,
        responses=download_responses("application/x-ndjson", "seed-003 LogRecords"),
    )
    def export_jsonl(conn: Conn, run_id: RunId) -> Response:
        """Seed 003's LogRecords (what `contreact export` writes): a download, rebuilt
        by folding the stored log."""
        from contreact_events.wire.codec import event_from_json

        raw = views.events_jsonl(conn, run_id)
        try:
            records = export_records([event_from_json(line) for line in raw])
            body = b"".join(orjson.dumps(r) + b"\n" for r in records)
        except ContReActEventError as exc:
            raise BadQuery(f"run {run_id} cannot be exported: {exc}") from None
        return download(body, "application/x-ndjson", f"{run_id}.jsonl")

    @app.get(
        "/runs/{run_id}/cycles.csv",
        response_class=Response,
        responses=download_responses("text/csv", "metrics per cycle"),
    )
    def cycles_csv(conn: Conn, run_id: RunId) -> Response:
        """Per-cycle metrics as CSV."""
        return download(views.cycles_csv(conn, run_id), "text/csv", f"{run_id}.cycles.csv")

    @app.get("/health.json")
    def health(conn: Conn) -> Health:
        """The projection version and how many runs the store holds."""
        count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        following = conn.execute("SELECT count(*) FROM runs WHERE terminal = 0").fetchone()[0]
        return Health(ok=True, projection_version=STORE_VERSION, runs=count, following=following)

    @app.get("/stream", include_in_schema=False)
    async def stream(
        request: Request, run: Annotated[list[RunIdItem] | None, Query()] = None
    ) -> StreamingResponse:
        """Server-sent events: ``change`` with the rows of the runs that changed (only
        ``run`` when given), so the open page updates without a reload."""
        wanted = set(run or [])
        return StreamingResponse(
            changes(request, app.state.notifier, wanted, settings),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        """plotly.js from the installed plotly package: never a CDN."""
        return FileResponse(
            plotly_path(),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    app.mount("/static", StaticFiles(packages=[("contreact_ui", "static")]), name="static")
    return app


def plotly_path() -> Any:
    from importlib import resources

    return resources.files("plotly").joinpath("package_data", "plotly.min.js")


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
                "runs": [r.model_dump(mode="json") for r in rows],
            }
        ).decode()
        yield f"event: change\ndata: {body}\n\n"


def _rows(settings: UISettings, changed: set[str] | None, wanted: set[str]) -> list[RunRow]:
    ids = sorted(changed if changed is not None else wanted)
    if not ids:
        return []
    with open_readonly(settings) as conn:
        return views.run_rows(conn, ids)


def jsonable_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for error in exc.errors():
        out.append(
            {
                "loc": list(error.get("loc", ())),
                "msg": str(error.get("msg", "")),
                "type": str(error.get("type", "")),
            }
        )
    return out


def describe_invalid(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())[1:]) or "request"
        if where == "run_id":
            parts.append("that is not a run id (letters, digits, '.', '_' or '-', up to 128)")
        else:
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
