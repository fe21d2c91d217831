"""Runs, models or experiments side by side: Table 1 beside the paper's figures, the
per-cycle charts, and the paper's Table 2."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from contreact_ui.deps import Conn, RunIdItem
from contreact_ui.models import ComparePage
from contreact_ui.pages import Pages
from contreact_ui.views.compare import compare_page

router = APIRouter()
pages = Pages(router)


@pages.page("/compare", "compare.html")
def compare(
    conn: Conn,
    run: Annotated[list[RunIdItem] | None, Query(description="run ids to compare")] = None,
    model: Annotated[list[str] | None, Query(description="models to compare")] = None,
    experiment: str | None = None,
    by: Annotated[str | None, Query(pattern="^(model|run|experiment)$")] = None,
) -> ComparePage:
    """Runs or models side by side; Table 1 beside the paper's figures; Table 2."""
    return compare_page(conn, runs=run or [], models=model or [], experiment=experiment, by=by)
