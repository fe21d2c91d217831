"""Search over the agents' texts in every run (``/search``)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from contreact_events.diversity.search_texts import TextKind
from contreact_ui.deps import Conn
from contreact_ui.models.research import SearchFilters, SearchPage
from contreact_ui.routes.registry import Pages
from contreact_ui.semantic import TextEmbedder
from contreact_ui.views.search import search_page

router = APIRouter()
pages = Pages(router)


def embedder(request: Request) -> TextEmbedder:
    """The app's embedder (``create_app`` makes it; ``main`` warms its model at start)."""
    state = request.app.state
    found = getattr(state, "embedder", None)
    if found is None:
        found = state.embedder = TextEmbedder()
    return found


@pages.page("/search", "search.html", embed=lambda page: {"filters": page.filters.model_dump()})
def search(
    conn: Conn,
    request: Request,
    q: Annotated[
        str,
        Query(
            max_length=500,
            description="the words to look for (no NUL character: 400 naming it)",
            json_schema_extra={"pattern": "^[^\\u0000]*$"},  # documented; the view says why
        ),
    ] = "",
    mode: Literal["keyword", "semantic"] = "keyword",
    kind: Annotated[list[TextKind] | None, Query(description="only these kinds of text")] = None,
    run: Annotated[str | None, Query(max_length=128, description="only this run")] = None,
    experiment: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> SearchPage:
    """Reflections, memory values, operator messages and tool outputs that hold the
    words (keyword: literal, any case) or are closest in meaning (semantic)."""
    filters = SearchFilters(
        q=q, mode=mode, kind=kind or [], run=run or None, experiment=experiment or None, limit=limit
    )
    model = embedder(request)
    page = search_page(conn, filters, model if mode == "semantic" else None)
    return page.model_copy(
        update={"search_model": model.state, "search_model_problem": model.problem}
    )
