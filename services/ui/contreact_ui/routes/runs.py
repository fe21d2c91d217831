"""The runs list."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse
from pydantic import BeforeValidator

from contreact_ui.deps import MAX_POSITION, Conn
from contreact_ui.models import RunFilters, RunSort, RunsPage
from contreact_ui.routes.registry import Pages
from contreact_ui.views.runs import runs_page

router = APIRouter()

Day = Annotated[date | None, BeforeValidator(lambda value: value or None)]
"""A day, or nothing: the form sends an empty field as ``since=``."""
pages = Pages(router)


@router.get("/", include_in_schema=False)
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
    since: Annotated[Day, Query(description="created on or after (UTC day)")] = None,
    until: Annotated[Day, Query(description="created on or before (UTC day)")] = None,
    sort: Annotated[RunSort, Query(description="the column to order by")] = "created_at",
    order: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
) -> RunsPage:
    """Every run with its status, model, backend, experiment, cycle, step and tokens;
    filtered by any of them and by the day it was created, ordered by any column."""
    filters = RunFilters(
        status=status,
        model=model,
        backend=backend,
        experiment=experiment,
        q=q,
        since=since,
        until=until,
        sort=sort,
        order=order,
        limit=limit,
        offset=offset,
    )
    return runs_page(conn, filters)
