"""The config composer (a run config or an experiment file, from a form) and the
composed YAML as a download. Nothing is stored: the form's values are the query.

Each mode is a ``Composer`` (fields, validation, the command that runs it): ``run``
validates with ``parse_run_config``, as ``contreact run`` does; ``experiment`` with
``parse_experiment`` and then ``expand``, as ``contreact experiment run`` does, so every
run it will make is checked. Both share one list of run-option fields, so a new run
option appears in both; "More settings" takes any other setting as ``key=value`` lines
(an unknown key is refused by name). ``/compose?from=RUN`` opens the form on a run's
config (``composer/from_run.py``; a test checks the round trip).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, Response

from contreact_ui.composer.form import COMPOSERS, compose, form_groups
from contreact_ui.composer.from_run import run_form_values
from contreact_ui.deps import RunIdItem, open_readonly
from contreact_ui.models import ComposePage
from contreact_ui.routes.registry import Pages, download, download_responses
from contreact_ui.views.composer import compose_page, run_config

router = APIRouter()
pages = Pages(router)

Mode = Annotated[str, Query(pattern=f"^({'|'.join(COMPOSERS)})$")]


def form_values(request: Request) -> dict[str, str]:
    """The form's fields: the query without ``mode``."""
    values = dict(request.query_params)
    values.pop("mode", None)
    values.pop("from", None)
    return values


@pages.page(
    "/compose",
    "compose.html",
    extras=lambda page: {"form_groups": form_groups(COMPOSERS[page.mode])},
)
def composer(
    request: Request,
    mode: Mode = "run",
    from_run: Annotated[
        RunIdItem | None,
        Query(alias="from", description="start from this run's config (deadlines, limits, ...)"),
    ] = None,
) -> ComposePage:
    """A form that composes a run config or an experiment file; nothing is stored.
    With ``from``, it opens on that run's config."""
    if from_run and mode == "run":
        with open_readonly(request.app.state.settings) as conn:
            values = run_form_values(run_config(conn, from_run))
        query = urlencode({"mode": mode, **values})
        return compose_page(mode, values, query, started_from=from_run)
    return compose_page(mode, form_values(request), request.url.query)


@router.get(
    "/compose.yaml",
    response_class=Response,
    responses=download_responses("application/yaml", "the composed config"),
)
def composed_yaml(request: Request, mode: Mode = "run") -> Response:
    """The composed config as a file to download (400 with the reason if invalid)."""
    composed = compose(mode, form_values(request))
    if composed.yaml is None:
        return PlainTextResponse(f"{composed.error}\n", status_code=400)
    return download(composed.yaml, "application/yaml", composed.filename)
