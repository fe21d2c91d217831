"""Issue 28, defect 15: an operator exchange whose reply timed out (``operator.timeout_s``
ran out, the automatic reply stood in, ``OperatorReplied.by == "timeout"``) is analysed
as what it is. The analysis says the reply timed out and reads nothing into the
automatic words (they are the run's policy, not the operator): neither the heuristic
nor a model classifies them, the memory policy keeps nothing of them, and later
analyses see no operator's words in that exchange. In the pure core; the log folds and
replays exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contreact_events.catalog.cognition import (
    OperatorMessageAnalysisRequested,
    OperatorMessageAnalyzed,
)
from contreact_events.core.fold import fold_all
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

TIMEOUT_S = 600.0
AUTO = "Please continue with the notes on tides, they matter a great deal to me."
"""An automatic reply a heuristic would read as a request worth keeping, were it the
operator's."""
PERSON = "Yes: keep the notes on tides."
GOOD = {
    "intent": "request",
    "context_type": "new",
    "confidence": 0.8,
    "persistence_score": 0.7,
    "summary": "The operator asks the agent to keep its notes.",
    "relevant_memories": [],
    "reasoning": "The reply tells the agent what to do.",
}


def agent(task: LLMTask) -> Any:
    if task.step == 1:
        return say("", ("send_message_to_operator", {"message": f"Cycle {task.cycle}: go on?"}))
    return say(f"Cycle {task.cycle}: I asked the operator.")


def settle(sim: Sim) -> None:
    """Play the workers (the model answers every analysis with GOOD) until the run
    waits for a person or ends."""
    for _ in range(200):
        if sim.state.terminal or sim.state.waiting_for is not None:
            return
        if sim.tasks:
            sim.drive([agent])
        elif sim.analyses:
            sim.answer_analysis(next(iter(sim.analyses)), json.dumps(GOOD))
        else:
            return
    raise AssertionError("the run did not settle")


def run(analysis: str, replies: tuple[str | None, ...], **cognition: Any) -> Sim:
    """A human-mode run, one message a cycle: each answered in person (text) or left
    until its deadline expires (None)."""
    config = make_config(
        cycle_count=len(replies),
        operator={"mode": "human", "timeout_s": TIMEOUT_S, "auto_reply": AUTO},
        cognition={"analysis": analysis, **cognition},
    )
    sim = Sim(config)
    sim.drive([agent])
    settle(sim)
    for reply in replies:
        head = sim.state.waiting_for
        assert head is not None, sim.state.phase
        if reply is None:
            sim.send(
                "TaskFailed", head.task_id, task_id=head.task_id, cause="expired", reason="late"
            )
        else:
            sim.send("OperatorReplied", task_id=head.task_id, text=reply, by="operator")
        settle(sim)
    assert sim.state.status == "completed", sim.state.status
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert fold_all(sim.log) == sim.state
    return sim


def analyses(sim: Sim) -> list[OperatorMessageAnalyzed]:
    return [e for e in sim.log if isinstance(e, OperatorMessageAnalyzed)]


def requests(sim: Sim) -> list[OperatorMessageAnalysisRequested]:
    return [e for e in sim.log if isinstance(e, OperatorMessageAnalysisRequested)]


@pytest.mark.parametrize("analyser", ["heuristic", "model"])
def test_a_timed_out_reply_is_analysed_as_no_reply(analyser: str) -> None:
    sim = run(analyser, (None,))
    (replied,) = [e for e in sim.log if e.type == "OperatorReplied"]
    assert replied.by == "timeout" and replied.text == AUTO  # the run went on with it
    (analysed,) = analyses(sim)
    a = analysed.analysis
    assert "No reply from the operator within 600 s" in a.summary
    assert "not the operator's words" in a.summary
    assert "The operator" not in a.summary.split(":")[0].replace("No reply from the operator", "")
    assert a.intent == "conversation" and a.confidence == 0.0 and a.persistence_score == 0.0
    assert a.relevant_memories == ()
    (requested,) = requests(sim)
    assert requested.exchange.operator_reply == ""  # the automatic words are not the operator's
    assert requested.analyser == "heuristic"  # no model is asked to read them
    if analyser == "model":
        assert analysed.fallback_reason is not None and "did not reply in time" in (
            analysed.fallback_reason
        )
        assert not [t for t in sim.log if t.type == "LLMRequested" and "analysis" in str(t)]


def test_the_model_still_analyses_the_replies_a_person_gave() -> None:
    sim = run("model", (PERSON, None))
    first, second = requests(sim)
    assert first.analyser == "model" and first.exchange.operator_reply == PERSON
    assert second.analyser == "heuristic" and second.exchange.operator_reply == ""
    by_task = {e.task_id: e for e in analyses(sim)}
    assert by_task[first.task_id].analysis.analyser == "model"
    assert by_task[first.task_id].analysis.summary == GOOD["summary"]
    assert "No reply from the operator" in by_task[second.task_id].analysis.summary


def test_later_analyses_see_no_operator_words_in_a_timed_out_exchange() -> None:
    sim = run("heuristic", (None, PERSON))
    _, later = requests(sim)
    assert [e.operator_reply for e in later.recent] == [""]
    assert later.exchange.operator_reply == PERSON
    assert analyses(sim)[1].analysis.intent == "request"  # the person's reply is read


def test_the_memory_policy_keeps_nothing_of_a_timed_out_reply() -> None:
    kept = run("heuristic", (PERSON, None), memory_policy=True, persistence_threshold=0.1)
    stored = [e for e in kept.log if e.type == "PersistentMemoryRequested"]
    assert [e.cycle for e in stored] == [1]  # the person's exchange only
    assert AUTO not in json.dumps([e.model_dump(mode="json") for e in stored])
