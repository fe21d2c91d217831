"""An experiment's report (``/experiments/{name}/report.html``): the same HTML file
``contreact report NAME`` writes, made by the same code (``contreact_analysis.report``)
from the same logs (the events the dashboard's store holds, as stored). One
self-contained page: no script, styles and charts inline. An HTML page, like the
other pages' HTML, it is not in the OpenAPI document (which describes the JSON)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse

from contreact_analysis.exceptions import AnalysisError
from contreact_events.config import RUN_ID_PATTERN
from contreact_events.exceptions import ContReActEventError
from contreact_ui.assessments import Assessments
from contreact_ui.deps import Conn, Forks
from contreact_ui.exceptions import BadQuery
from contreact_ui.views.assessments import table2_live
from contreact_ui.views.experiment_logs import experiment_logs

router = APIRouter()

Experiment = Annotated[
    str,
    PathParam(pattern=RUN_ID_PATTERN.pattern, max_length=128, description="an experiment name"),
]


@router.get(
    "/experiments/{experiment}/report.html", response_class=HTMLResponse, include_in_schema=False
)
def experiment_report(
    conn: Conn, reader: Assessments, experiment: Experiment, forks: Forks = None
) -> HTMLResponse:
    """The experiment's report, as `contreact report` writes it; Table 2 from the
    assessment records the compare page reads (``views.assessments.table2_live``). The
    analysis libraries are imported here, at the first report, not at the start."""
    from contreact_analysis.frames import build_frames
    from contreact_analysis.report import build_report, render_report

    view = forks or "none"
    try:
        logs = experiment_logs(conn, experiment)
        frames = build_frames(logs)
        live = table2_live(conn, reader, experiment=experiment, forks=view, ratings_query="")
        pei = live.matrix.pei if live.matrix is not None else None
        command = f"contreact report {experiment} --out {experiment}.html"
        report = build_report(
            frames,
            title=f"Experiment {experiment}",
            command=command + (f" --forks {view}" if view != "none" else ""),
            table2=pei if pei is not None and pei.ratings else None,
            forks=view,
            queries={run: reader.queries(run)[0] for run in frames.runs["run_id"]},
        )
    except (AnalysisError, ContReActEventError) as exc:
        raise BadQuery(f"experiment {experiment}: no report ({exc})") from None
    return HTMLResponse(render_report(report))
