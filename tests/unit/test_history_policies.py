"""``history: truncate | compact`` in the pure core (issue 31): prompts carry a bounded
part of a long history; a compaction is a logged task whose answer stands for the older
part; replay reproduces every prompt hash, a fork after a compaction goes on with it."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.catalog.compaction import HistoryCompactionRequested
from contreact_events.config.history import SUMMARY_TURN
from contreact_events.exceptions import ConfigError
from contreact_events.history.evaluation import evaluator_input
from contreact_events.history.export import export_records
from contreact_events.history.interview import query_input
from contreact_events.history.replay import replay_check
from contreact_events.instruments import load_instrument
from contreact_events.wire.codec import event_from_json, event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say

CHATS: list[LLMTask] = []


def agent(task: LLMTask) -> Any:
    """A note each cycle, then a reflection; a summary when asked for one."""
    CHATS.append(task)
    if task.task_id.endswith("/compact"):
        return say(f"summary made before cycle {task.cycle}")
    if task.step == 1:
        return say("", ("write", {"key": f"k{task.cycle}", "value": "v"}))
    return say(f"reflection {task.cycle}")


def replays(events: list[Any]) -> None:
    log = [event_from_json(event_to_json(e)) for e in events]
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert list(export_records(log))


def test_truncate_keeps_the_system_message_and_the_last_messages() -> None:
    CHATS.clear()
    config = make_config(run_id="t", cycle_count=12, history={"policy": "truncate", "keep_last": 6})
    sim = Sim(config)
    sim.drive([agent])
    assert sim.state.status == "completed"
    assert len(sim.state.message_history) == 12 * 4  # the log keeps everything
    for task in CHATS:
        assert task.messages[0].role == "system"
        assert len(task.messages) <= 1 + 6
        assert task.messages[1].role != "tool"  # no result without its call
    replays(sim.log)


def test_compact_keeps_every_prompt_under_the_budget_and_replays() -> None:
    CHATS.clear()
    rule = {"policy": "compact", "keep_last": 4, "threshold_messages": 12}
    sim = Sim(make_config(run_id="c", cycle_count=30, history=rule))
    sim.drive([agent])
    assert sim.state.status == "completed"
    asked = [e for e in sim.log if isinstance(e, HistoryCompactionRequested)]
    assert len(asked) >= 5 and sim.state.compactions == len(asked)
    summaries = [t for t in CHATS if t.task_id.endswith("/compact")]
    assert [t.task_id for t in summaries] == [e.task_id for e in asked]
    assert all(not t.tools and t.messages[0].role == "system" for t in summaries)
    assert "your earlier summary" in summaries[-1].messages[1].content  # built on the last
    calls = [t for t in CHATS if not t.task_id.endswith("/compact")]
    budget = 1 + 1 + 12 + 4  # system, summary, the threshold, one cycle's messages
    assert max(len(t.messages) for t in calls) <= budget
    last = calls[-1].messages
    assert last[1].content == SUMMARY_TURN.format(
        summary=f"summary made before cycle {asked[-1].cycle}"
    )
    replays(sim.log)
    # A fork after a compaction goes on with the summary in its prompts.
    child = ForkSim(sim.log, "c-2", 20, settings=["cycle_count=22"])
    CHATS.clear()
    child.drive([agent])
    assert child.state.status == "completed"
    assert child.state.summary is not None and child.state.compactions >= 1
    replays(child.log)


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ({"policy": "compact", "keep_last": 10, "threshold_messages": 8}, "must be above"),
        ({"policy": "compact", "threshold_messages": None}, "needs threshold_messages"),
        ({"policy": "cut"}, "history.policy"),
        ({"policy": "truncate", "keep_last": 2}, "history.keep_last"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_with_one_line(
    rule: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        make_config(run_id="x", cycle_count=2, history=rule)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_the_evaluator_and_a_query_see_the_history_the_agent_last_saw() -> None:
    """PEI of a compacted run: the evaluator gets the summary and the messages after it,
    as the agent's own prompts carried them, and its record says so."""
    CHATS.clear()
    rule = {"policy": "compact", "keep_last": 4, "threshold_messages": 12}
    sim = Sim(make_config(run_id="c", cycle_count=12, history=rule))
    sim.drive([agent])
    made = evaluator_input(sim.log, load_instrument("pei"))
    assert made.history_seen.startswith("summary of messages 1-")
    assert made.messages[1].content.startswith("Summary of your earlier history")
    assert len(made.messages) < len(sim.state.message_history)
    queried = query_input(sim.log, "What do you remember?")
    assert queried.messages[1] == made.messages[1]
    whole = Sim(make_config(run_id="w", cycle_count=2))
    whole.drive([agent])
    assert evaluator_input(whole.log, load_instrument("pei")).history_seen == "whole"


def test_a_truncated_window_never_starts_with_a_result_whose_call_was_cut() -> None:
    """Two tool calls an answer: some windows would begin between a call and its
    results; they move on past the results instead."""
    sent: list[LLMTask] = []

    def two_calls(task: LLMTask) -> Any:
        sent.append(task)
        if task.step == 1:
            return say("", ("write", {"key": f"k{task.cycle}", "value": "v"}), ("list", {}))
        return say(f"reflection {task.cycle}")

    rule = {"policy": "truncate", "keep_last": 6}
    sim = Sim(make_config(run_id="t2", cycle_count=8, history=rule))
    sim.drive([two_calls])
    assert sim.state.status == "completed"
    assert all(t.messages[1].role != "tool" for t in sent)
    assert any(len(t.messages) < 1 + 6 for t in sent[4:])  # a window that moved on
    replays(sim.log)
