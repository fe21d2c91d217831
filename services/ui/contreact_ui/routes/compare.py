"""Runs, models or experiments side by side: Table 1 beside the paper's figures, the
per-cycle charts, and the paper's Table 2."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query

from contreact_ui.assessments import Assessments
from contreact_ui.deps import Conn, Forks, RunIdItem
from contreact_ui.models import ComparePage
from contreact_ui.routes.registry import Pages
from contreact_ui.views.assessments import table2_live
from contreact_ui.views.compare import compare_page

router = APIRouter()
pages = Pages(router)


@pages.page("/compare", "compare.html")
def compare(
    conn: Conn,
    reader: Assessments,
    run: Annotated[list[RunIdItem] | None, Query(description="run ids to compare")] = None,
    model: Annotated[list[str] | None, Query(description="models to compare")] = None,
    experiment: str | None = None,
    by: Annotated[str | None, Query(pattern="^(model|run|experiment)$")] = None,
    forks: Forks = None,
) -> ComparePage:
    """Runs or models side by side; Table 1 beside the paper's figures; Table 2."""
    page = compare_page(
        conn, runs=run or [], models=model or [], experiment=experiment, by=by, forks=forks
    )
    scope = [("run", r) for r in run or []] + [("model", m) for m in model or []]
    scope += [("experiment", experiment)] if experiment else []
    scope += [("forks", forks)] if forks else []
    table2 = table2_live(
        conn,
        reader,
        runs=run or [],
        models=model or [],
        experiment=experiment,
        forks=forks,
        ratings_query=urlencode(scope),
    )
    return page.model_copy(update={"assessments": table2})
