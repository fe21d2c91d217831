"""The ratings behind Table 2: every assessment record of a selection of runs (as on
/compare: runs, or models and an experiment), narrowed to a cell (history model x
evaluator), an instrument or a status, with the raw answers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from contreact_ui.assessments import Assessments
from contreact_ui.deps import Conn, Forks, RunIdItem
from contreact_ui.models.assessments import RatingsPage
from contreact_ui.routes.registry import Pages
from contreact_ui.views.assessments import ratings_page

router = APIRouter()
pages = Pages(router)

Name = Annotated[str | None, Query(max_length=200)]


@pages.page("/assessments", "assessments.html")
def assessments(
    conn: Conn,
    reader: Assessments,
    run: Annotated[list[RunIdItem] | None, Query(description="run ids")] = None,
    model: Annotated[list[str] | None, Query(description="models of the runs")] = None,
    experiment: Name = None,
    history: Annotated[str | None, Query(max_length=200, description="history model")] = None,
    evaluator: Annotated[str | None, Query(max_length=200, description="evaluator")] = None,
    instrument: Annotated[str | None, Query(pattern="^(pei|patterns)$")] = None,
    status: Annotated[
        str | None, Query(pattern="^(rated|unparseable|refused|off_scale|failed)$")
    ] = None,
    forks: Forks = None,
) -> RatingsPage:
    """Assessment records with their raw answers: a Table 2 cell's, a run's, a model's."""
    return ratings_page(
        conn,
        reader,
        runs=run or [],
        models=model or [],
        experiment=experiment,
        history=history,
        evaluator=evaluator,
        instrument=instrument,
        status=status,
        forks=forks,
    )
