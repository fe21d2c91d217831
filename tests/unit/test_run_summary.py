"""``run_summary(state)`` is the one summary of a run: the Redis listing hash is its
slow-changing part, and its token and LLM time totals equal what the log's answers
say, at every point of every saved log (a cycle in progress included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contreact_bus.runs import meta_fields
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.core.fold import fold
from contreact_events.core.state import AgentState
from contreact_events.history.run_summary import run_summary
from contreact_events.wire.codec import event_from_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_totals_follow_the_answers_event_by_event(path: Path) -> None:
    lines = path.read_bytes().splitlines()
    events = [event_from_json(line, where=f"{path.name}:{n}") for n, line in enumerate(lines, 1)]
    state = AgentState(run_id=events[0].run_id)
    prompt = completion = 0
    seconds = 0.0
    for event in events:
        state = fold(state, event)
        if isinstance(event, LLMResponded):
            prompt += event.usage.prompt_tokens
            completion += event.usage.completion_tokens
            seconds += event.usage.wall_s
        summary = run_summary(state)
        assert (summary.prompt_tokens, summary.completion_tokens) == (prompt, completion)
        assert summary.tokens == prompt + completion
        assert summary.llm_seconds == pytest.approx(seconds)
        assert summary.events == state.seq
        assert summary.cycle == state.cycle_number


def test_the_listing_hash_is_the_summarys_slow_part() -> None:
    path = FIXTURES / "runlog-v1-completed.jsonl"
    events = [event_from_json(line) for line in path.read_bytes().splitlines()]
    state = AgentState(run_id=events[0].run_id)
    for event in events:
        state = fold(state, event)
    summary = run_summary(state)
    assert meta_fields(state) == {
        "run_id": summary.run_id,
        "status": "completed",
        "cycle": str(summary.cycle),
        "cycle_count": str(summary.cycle_count),
        "model": summary.model,
        "backend": summary.backend,
        "resolved_model": summary.resolved_model,
        "host": "",  # a version-2 log: the host that answered was not recorded
        "experiment": summary.experiment,
        "waiting_task": "",
        "failure_reason": "",
    }


def test_a_new_run_has_an_empty_summary() -> None:
    summary = run_summary(AgentState(run_id="r1"))
    assert (summary.status, summary.model, summary.cycle_count, summary.tokens) == ("new", "", 0, 0)
    assert meta_fields(AgentState(run_id="r1"))["backend"] == ""


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_listing_is_computed_without_the_summary_and_agrees_at_every_event(
    path: Path,
) -> None:
    """The orchestrator compares the listing after every step; it is computed without
    the summary's O(cycles) sums (issue 20), and must stay the summary's slow part."""
    lines = path.read_bytes().splitlines()
    events = [event_from_json(line, where=f"{path.name}:{n}") for n, line in enumerate(lines, 1)]
    state = AgentState(run_id=events[0].run_id)
    assert meta_fields(state) == run_summary(state).listing_fields()
    for event in events:
        state = fold(state, event)
        assert meta_fields(state) == run_summary(state).listing_fields()
