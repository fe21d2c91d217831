"""A fork's lineage page (``/runs/{run_id}/lineage``)."""

from __future__ import annotations

from fastapi import APIRouter

from contreact_ui.deps import Conn, RunId
from contreact_ui.models.lineage import LineagePage
from contreact_ui.routes.registry import Pages
from contreact_ui.views.lineage import COMPARED, lineage_page

router = APIRouter()
pages = Pages(router)


@pages.page("/runs/{run_id}/lineage", "lineage.html", extras=lambda _page: {"compared": COMPARED})
def lineage(conn: Conn, run_id: RunId) -> LineagePage:
    """A fork: its parent, the cycle it forked after, what changed, and both runs side by
    side cycle by cycle from the next one."""
    return lineage_page(conn, run_id)
