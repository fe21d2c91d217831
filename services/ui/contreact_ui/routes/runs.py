"""The runs list."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse

from contreact_ui.deps import MAX_POSITION, Conn
from contreact_ui.models import RunFilters, RunsPage
from contreact_ui.pages import Pages
from contreact_ui.views.runs import runs_page

router = APIRouter()
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
    return runs_page(conn, filters)
