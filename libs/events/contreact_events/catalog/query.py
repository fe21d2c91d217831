"""Query records: a researcher's question put to a run's model without touching the run
(``contreact query``), and the answer.

Like assessments they are not run-log events: a run's log, digest and archive never
change. Each run's queries live in a stream of their own (``run:{RUN}:queries``) and an
append-only archive beside the run's (``RUN.queries.jsonl``), with their own union,
schema versions and upcasters here. Each record pins what was asked (the log position,
the run's digest there, and the hash of the exact input: ``history.interview``), so
the input can be rebuilt from the log and compared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, TypeAdapter

from contreact_events.catalog.chat import LLMUsage
from contreact_events.catalog.envelope import EventBase

MAX_QUESTION_CHARS = 4000
"""The longest question ``contreact ask`` and ``contreact query`` take: a question is a
turn, not a document (a longer one is refused with one line, never cut)."""


class RunQueried(EventBase):
    """The run's model (or another, ``--model``) answered a researcher's question about
    the run, asked with the history as the agent last saw it and no tools. ``run_id``
    and ``correlation_id`` are the queried run; ``ts`` is when the record was written."""

    type: Literal["RunQueried"] = "RunQueried"
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    """The question as asked (untrusted text: escape it when shown)."""
    by: str = Field(min_length=1, max_length=200)
    """Who asked (``--by``, else ``CONTREACT_BY`` or the login name)."""
    model: str
    """The model asked (the run's, or ``--model``)."""
    model_ran: str = ""
    """The model that answered, as the backend reports it."""
    backend: str
    host: str | None = None
    options: dict[str, Any] = {}
    """The generation options sent (the run's own)."""
    input_sha256: str
    """SHA-256 of the exact input (``prompt.sha256_of_prompt`` over its messages, no
    tools): what ``history.interview.query_problem`` recomputes from the log."""
    run_events: int = Field(ge=1)
    """How many events of the run's log the history was folded from."""
    run_digest: str
    """``AgentState.digest`` after those events."""
    state_shape: str
    """``AgentState.shape()`` of the code that made ``run_digest``."""
    cycle: int = Field(ge=0)
    """The cycle of the agent's last answer in that history."""
    answer: str
    """The model's answer, untouched (untrusted text: escape it when shown)."""
    thinking: str | None = None
    usage: LLMUsage = LLMUsage()


QueryEvent = RunQueried
"""The union of query records (one type so far)."""

QUERY_ADAPTER: TypeAdapter[QueryEvent] = TypeAdapter(QueryEvent)

QUERY_EVENT_CLASSES: dict[str, type[EventBase]] = {"RunQueried": RunQueried}

QUERY_SCHEMA_VERSIONS: dict[str, int] = {
    name: int(cls.model_fields["schema_version"].default)
    for name, cls in QUERY_EVENT_CLASSES.items()
}

QUERY_UPCASTERS: Mapping[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}
"""(event type, stored version) -> the data at version + 1, as the run log's
``UPCASTERS``: register one whenever a ``schema_version`` is raised."""
