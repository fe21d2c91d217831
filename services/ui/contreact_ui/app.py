"""The dashboard's app: settings and the follower's notifier in ``app.state``, the
security headers, compression, the error pages, and one router per page family
(``routes/``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

from contreact_ui.projection.follower import Notifier
from contreact_ui.projection.snapshots import SNAPSHOTS_KEPT, SnapshotCache
from contreact_ui.projection.tables import STORE_VERSION
from contreact_ui.render import Renderer
from contreact_ui.routes import ROUTERS
from contreact_ui.routes.registry import add_error_handlers
from contreact_ui.semantic import TextEmbedder
from contreact_ui.settings import UISettings

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
    app.state.renderer = Renderer()
    app.state.snapshots = SnapshotCache(SNAPSHOTS_KEPT)
    app.state.embedder = TextEmbedder()
    app.middleware("http")(security_headers)
    # Gzip when the browser takes it (Starlette leaves the live stream, text/event-stream,
    # and responses already compressed, plotly.js, alone).
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=6)
    add_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(packages=[("contreact_ui", "static")]), name="static")
    return app


async def security_headers(request: Request, call_next: Any) -> Response:
    response: Response = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response
