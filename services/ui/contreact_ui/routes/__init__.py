"""The dashboard's routes, one ``APIRouter`` per page family. Read-only: every route is
a GET, and the store is opened read-only for each request.

Every page is one view function registered twice (``pages.Pages.page``): at
``PATH.json`` it answers the page's pydantic model as JSON (documented in the OpenAPI
document), at ``PATH`` the same model rendered as HTML. A page cannot show one thing
and serve another.

* ``runs``: the runs list (``/runs``);
* ``run``: a run's page and its sub-pages: memory, the event log, one event, replay;
* ``lineage``: a fork's parent, what changed, and the two runs cycle by cycle;
* ``downloads``: a run's log, its seed-003 export, its metrics as CSV;
* ``compare``: runs or models side by side, with the paper's tables;
* ``composer``: the config composer and its YAML download;
* ``experiment``: an experiment's design, replicas and downloads;
* ``search``: the agents' texts in every run, by keyword or meaning;
* ``service``: health, the live-update stream, plotly.js;
* ``assessments``: the assessment records behind Table 2, with the raw answers;
* ``report``: an experiment's report (``contreact report``'s HTML file).
"""

from fastapi import APIRouter

from contreact_ui.routes import (
    assessments,
    compare,
    composer,
    downloads,
    experiment,
    lineage,
    report,
    run,
    runs,
    search,
    service,
)

ROUTERS: tuple[APIRouter, ...] = (
    runs.router,
    run.router,
    lineage.router,
    downloads.router,
    compare.router,
    composer.router,
    experiment.router,
    search.router,
    service.router,
    assessments.router,
    report.router,
)
