"""A run's page and its sub-pages: memory at a cycle, the event log, one event, the
replay of the agent's state after any event, and the timeline of its calls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from contreact_ui.assessments import Assessments
from contreact_ui.deps import MAX_POSITION, Conn, RunId, Seq, Snapshots
from contreact_ui.models import (
    EventDetail,
    EventFilters,
    EventsPage,
    MemoryPage,
    QueryRow,
    ReplayPage,
    RunPage,
)
from contreact_ui.models.timeline import TimelinePage
from contreact_ui.routes.registry import Pages
from contreact_ui.views.assessments import run_assessments
from contreact_ui.views.events import event_detail, events_page
from contreact_ui.views.memory import memory_page
from contreact_ui.views.replay import replay_page
from contreact_ui.views.run import chart_data, run_page
from contreact_ui.views.timeline import timeline_page

router = APIRouter()
pages = Pages(router)


@pages.page("/runs/{run_id}", "run.html", embed=chart_data)
def run(
    conn: Conn,
    run_id: RunId,
    reader: Assessments,
    from_cycle: Annotated[
        int | None, Query(ge=0, le=1_000_000, description="first cycle shown in full")
    ] = None,
) -> RunPage:
    """One run: per-cycle metrics, similarity, reflections, operator, regenerations,
    its assessments and the questions asked of it."""
    page = run_page(conn, run_id, from_cycle)
    rows, note = run_assessments(conn, reader, run_id)
    asked, asked_note = reader.queries(run_id)
    queries = [
        QueryRow(
            at=q.ts,
            by=q.by,
            model=q.model,
            cycle=q.cycle,
            question=q.question,
            answer=q.answer,
            input_sha256=q.input_sha256,
        )
        for q in asked
    ]
    if asked_note:
        note = f"{note}. {asked_note}" if note else asked_note
    return page.model_copy(
        update={"assessments": rows, "assessments_note": note, "queries": queries}
    )


@pages.page("/runs/{run_id}/memory", "memory.html")
def memory(
    conn: Conn,
    run_id: RunId,
    cycle: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
) -> MemoryPage:
    """Memory as it stood at the end of a cycle (default: the last one)."""
    return memory_page(conn, run_id, cycle)


@pages.page(
    "/runs/{run_id}/events",
    "events.html",
    embed=lambda page: {"run_id": page.run_id, "filters": page.filters.model_dump(mode="json")},
)
def events(
    conn: Conn,
    run_id: RunId,
    type: Annotated[list[str] | None, Query(description="event types to show")] = None,
    cycle: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
    after: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
    limit: Annotated[int | None, Query(ge=1, le=5000, description="default 200")] = None,
) -> EventsPage:
    """The run log, filtered by type and cycle, a page at a time; a long run's log
    opens a cycle at a time."""
    filters = EventFilters(
        type=type or [], cycle=cycle, after=after, limit=limit if limit is not None else 200
    )
    return events_page(conn, run_id, filters, chosen_limit=limit is not None)


@pages.page("/runs/{run_id}/events/{seq}", "event.html")
def event(conn: Conn, run_id: RunId, seq: Seq) -> EventDetail:
    """One event with its payload and the events of the same task."""
    return event_detail(conn, run_id, seq)


@pages.page("/runs/{run_id}/replay", "replay.html", embed=lambda page: {"run_id": page.run_id})
def replay(
    conn: Conn,
    run_id: RunId,
    snapshots: Snapshots,
    seq: Annotated[int | None, Query(ge=0, le=MAX_POSITION)] = None,
    cycle: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    all_messages: Annotated[
        bool, Query(description="the whole conversation, not only its latest messages")
    ] = False,
    all_memory: Annotated[
        bool, Query(description="every memory key, not only the latest changed")
    ] = False,
) -> ReplayPage:
    """The agent's state as the fold has it after ``seq`` events (or at a cycle's start)."""
    return replay_page(conn, run_id, seq, cycle, all_messages, all_memory, snapshots=snapshots)


@pages.page(
    "/runs/{run_id}/timeline",
    "timeline.html",
    embed=lambda page: {
        "run_id": page.run_id,
        "by_cycle": page.model_dump(mode="json")["by_cycle"],
    },
)
def timeline(
    conn: Conn,
    run_id: RunId,
    cycle: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
) -> TimelinePage:
    """Where the time went: a cycle's LLM and tool calls with their durations, and
    every cycle's split."""
    return timeline_page(conn, run_id, cycle)
