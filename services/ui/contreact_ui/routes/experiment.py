"""An experiment's page (``/experiments/NAME``) and its downloads: every run's export
in one zip, Table 1 as CSV."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from contreact_events.config import RUN_ID_PATTERN
from contreact_ui.deps import Conn, Forks
from contreact_ui.models.research import ExperimentPage
from contreact_ui.routes.registry import Pages, download, download_responses
from contreact_ui.views import experiment as views

router = APIRouter()
pages = Pages(router)

Experiment = Annotated[
    str,
    Path(
        pattern=RUN_ID_PATTERN.pattern,
        max_length=128,
        description="an experiment's name (the runs' column experiment)",
    ),
]


@pages.page(
    "/experiments/{name}",
    "experiment.html",
    embed=lambda page: {"experiment": page.experiment},
)
def experiment(conn: Conn, name: Experiment) -> ExperimentPage:
    """An experiment's design (models x replicas, shared and per-model settings), each
    replica's current run, its attempts and last advisory, and the downloads."""
    return views.experiment_page(conn, name)


@router.get(
    "/experiments/{name}/exports.zip",
    response_class=Response,
    responses=download_responses("application/zip", "every run's export and log"),
)
def exports_zip(conn: Conn, name: Experiment) -> Response:
    """Every run's seed-003 export and its log, in one zip."""
    return download(views.exports_zip(conn, name), "application/zip", f"{name}.exports.zip")


@router.get(
    "/experiments/{name}/table1.csv",
    response_class=Response,
    responses=download_responses("text/csv", "Table 1 by model"),
)
def table1_csv(conn: Conn, name: Experiment, forks: Forks = None) -> Response:
    """Table 1 of the experiment by model, with the paper's figures, as CSV."""
    return download(views.table1_csv(conn, name, forks), "text/csv", f"{name}.table1.csv")
