"""One view function, two routes: ``PATH.json`` (the page's model, in the OpenAPI
document) and ``PATH`` (the same model rendered as HTML), as datasette does; and the
error answers, in the form the path asks for (JSON, plain text or an HTML page).

The HTML is rendered by the app's ``Renderer`` (``app.state.renderer``), so a router's
pages are declared once, at import, and any app that includes the router serves them."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from contreact_ui.exceptions import BadQuery, RunNotProjected, StoreUnavailable
from contreact_ui.render import Renderer
from contreact_ui.text import display

V = TypeVar("V", bound=Callable[..., BaseModel])


class ErrorBody(BaseModel):
    detail: str
    """What is wrong, in one line, and how to fix it."""


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "a parameter names nothing that exists"},
    404: {"model": ErrorBody, "description": "no such run"},
    503: {"model": ErrorBody, "description": "the projections are not built yet"},
}
REQUEST_PARAM = "ui_request"


def download_responses(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of a download: the file, or a one-line error as plain text."""
    text = {"text/plain": {"schema": {"type": "string"}}}
    return {
        200: {"content": {media_type: {}}, "description": description},
        400: {"content": text, "description": "the request names nothing that exists"},
        404: {"content": text, "description": "no such run"},
        503: {"content": text, "description": "the projections are not built yet"},
    }


def download(body: bytes | str, media_type: str, filename: str) -> Response:
    """A file to download, named ``filename`` (the answer of a ``download_responses``
    route)."""
    return Response(
        body,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def renderer(request: Request) -> Renderer:
    found: Renderer = request.app.state.renderer
    return found


class Pages:
    """Registers a router's pages (``@pages.page(path, template)`` on a view)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router

    def page(
        self,
        path: str,
        template: str,
        *,
        store: bool = True,
        extras: Callable[[Any], dict[str, Any]] | None = None,
        embed: Callable[[Any], dict[str, Any]] | None = None,
    ) -> Callable[[V], V]:
        """Register ``view`` at ``path.json`` (JSON) and ``path`` (HTML). The HTML
        carries the page's data for its scripts: all of it, or what ``embed`` picks."""

        def register(view: V) -> V:
            hints = typing.get_type_hints(view, include_extras=True)
            model = hints.pop("return")
            signature = inspect.signature(view)
            params = [p.replace(annotation=hints[p.name]) for p in signature.parameters.values()]
            typed = signature.replace(parameters=params, return_annotation=model)
            view.__signature__ = typed  # type: ignore[attr-defined]
            self.router.add_api_route(
                f"{path}.json",
                view,
                methods=["GET"],
                response_model=model,
                responses=ERROR_RESPONSES if store else None,
                name=f"{view.__name__}_json",
                summary=(view.__doc__ or "").strip().splitlines()[0] if view.__doc__ else None,
            )
            names = {p.name for p in params}
            wants_request = [p.name for p in params if p.annotation is Request]

            def html(**kwargs: Any) -> HTMLResponse:
                request: Request = kwargs.pop(REQUEST_PARAM)
                kwargs.update(dict.fromkeys(wants_request, request))
                page = view(**{k: v for k, v in kwargs.items() if k in names})
                query = request.url.query
                body = renderer(request).page(
                    template,
                    page,
                    data=embed(page) if embed else None,
                    path=request.url.path,
                    query=query,
                    params=request.query_params,
                    json_url=f"{request.url.path}.json" + (f"?{query}" if query else ""),
                    **(extras(page) if extras else {}),
                )
                return HTMLResponse(body)

            extra = inspect.Parameter(
                REQUEST_PARAM, inspect.Parameter.KEYWORD_ONLY, annotation=Request
            )
            html.__signature__ = typed.replace(  # type: ignore[attr-defined]
                parameters=[
                    p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                    for p in params
                    if p.name not in wants_request
                ]
                + [extra],
                return_annotation=HTMLResponse,
            )
            self.router.add_api_route(
                path,
                html,
                methods=["GET"],
                response_class=HTMLResponse,
                include_in_schema=False,
                name=view.__name__,
            )
            return view

        return register


def error_response(request: Request, status: int, message: str) -> Response:
    """The one-line error, as JSON, plain text (downloads) or an HTML page."""
    path = request.url.path
    if path.endswith(".json"):
        return JSONResponse({"detail": message}, status_code=status)
    if path.endswith((".jsonl", ".csv", ".yaml", ".zip")) or path.startswith("/static/"):
        return PlainTextResponse(f"{message}\n", status_code=status)
    return HTMLResponse(renderer(request).error(status, message), status_code=status)


def add_error_handlers(app: FastAPI) -> None:
    """Named errors become 404 (no such run), 503 (no store yet), 400 (a parameter
    names nothing that exists); invalid parameters 422."""
    for error, status in ((RunNotProjected, 404), (StoreUnavailable, 503), (BadQuery, 400)):
        app.add_exception_handler(error, _handler(status))
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http)  # type: ignore[arg-type]


def _handler(status: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        return error_response(request, status, str(exc))

    return handle


async def _http(request: Request, exc: HTTPException) -> Response:
    """Starlette's own answers (no route, a static file missing, a method refused) in
    the same form as the named errors: the site's page for a browser."""
    if exc.status_code == 404:
        message = f"there is no page at {display(request.url.path)}: the runs are listed at /runs"
    else:
        message = str(exc.detail)
    response = error_response(request, exc.status_code, message)
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    return response


async def _invalid(request: Request, exc: RequestValidationError) -> Response:
    if request.url.path.endswith(".json"):
        return JSONResponse({"detail": jsonable_errors(exc)}, status_code=422)
    return error_response(request, 422, describe_invalid(exc))


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
