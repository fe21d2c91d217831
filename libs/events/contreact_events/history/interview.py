"""``contreact query``, pure: what the run's model is asked when a researcher puts a
question to a run without touching it, and what pins the answer to the run.

The query is read-only and has no tools (as the paper's harness's ``query``): the
model receives the history exactly as the agent last saw it, then the question as the
next user turn. "As the agent last saw it" is the log up to the agent's last answer
(its last ``LLMResponded``): the system message of that call (the system prompt with
the advisory and the memory block in force then) and every message of the history
once, in order, that answer included. Its first messages are what that call sent:
hashed with the tools the call offered they give the ``prompt_sha256`` its
``LLMRequested`` recorded (``tests/unit/test_interview.py`` holds them to it), unless
the repetition guard's feedback stood in that prompt (it is no part of the history).

The answer is recorded beside the run (``catalog.query.RunQueried``) with the hash of
this input (``prompt.sha256_of_prompt`` over the messages, no tools), the run's digest
and the log position, so ``query_problem`` can rebuild and compare it later, as
``assess verify`` does for a rating. The run's log never changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contreact_events.catalog import Event
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.catalog.query import RunQueried
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import system_message
from contreact_events.core.researcher import question_problem
from contreact_events.core.state import AgentState
from contreact_events.exceptions import NotQueryable
from contreact_events.history.pinned import PinnedInput


@dataclass(frozen=True)
class QueryInput(PinnedInput):
    """What the model is sent for a query (the user turn: the question), and what pins
    it to the run (``run_events``: up to the agent's last answer)."""

    cycle: int
    """The cycle of the agent's last answer."""
    state: AgentState
    """The state after those events (the run's model and backend as it reached them)."""


def query_input(events: Sequence[Event], question: str) -> QueryInput:
    """The messages of a query of the run logged in ``events``; ``NotQueryable`` (one
    line) for a question that cannot be asked or a run whose model never answered."""
    problem = question_problem(question)
    if problem is not None:
        raise NotQueryable(problem)
    last = next(
        (i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], LLMResponded)), None
    )
    if last is None:
        run = events[0].run_id if events else "?"
        raise NotQueryable(
            f"run {run}: its model has not answered yet, so there is no history to query; "
            "query it once its first call is answered"
        )
    count = last + 1
    state = fold_all(events[:count])
    return QueryInput.asking(
        state, system_message(state), question, count, cycle=state.cycle_number, state=state
    )


def query_problem(events: Sequence[Event], recorded: RunQueried) -> str | None:
    """Rebuild a recorded query's input from the run's log and compare: None when it
    matches, else one line saying what differs."""
    try:
        built = query_input(events[: recorded.run_events], recorded.question)
    except NotQueryable as exc:
        return str(exc)
    return built.difference(recorded, reader="the query", name="query input")
