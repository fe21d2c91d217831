"""Runs whose operator exchanges are analysed (seed 002, issue 17), for the dashboard's
tests of the analysis beside each exchange and of persistent memory entries: made by
the pure core (``Sim``) with ``cognition.analysis: model``, hostile text in the agent's
messages, the operator's replies, the model's analyses and the memory keys.

``analysed_log`` makes a three-cycle run: the first exchange's analysis is the model's
(hostile summary and reasoning, relevant memories named), the second's is the
heuristic's standing in for a malformed model answer, the third's is never answered
(the run waits for it: "awaiting"). It runs without the memory policy, and its agent
writes ``PERSISTENT_KEY`` itself: a key under the policy's prefix that is the agent's
own (nothing reserves the prefix without the policy), so never marked persistent.

``policy_log`` makes a two-cycle run with the memory policy: the first exchange scores
high and the platform keeps it (``KEPT_BY_POLICY``, written by ``PersistentMemoryStored``:
persistent); the second exchange's analysis names that key among its relevant
memories."""

from __future__ import annotations

import json

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.cognition.policy import PERSISTENT_PREFIX, kept_key
from contreact_events.wire.tasks import LLMTask
from tests.support import hostile
from tests.support.sim import Sim, make_config, say

PERSISTENT_KEY = f"{PERSISTENT_PREFIX}op-c1"
"""Written by the agent itself, in a run without the memory policy."""
KEPT_BY_POLICY = kept_key(1, 1, 1)
"""The first exchange of ``policy_log``'s run (cycle 1, step 1, its second call), kept by
the platform's memory policy."""
NOTES_KEY = "notes/tides"
SUMMARY = "The operator wants notes <b onmouseover=\"window.__pwned='summary'\">kept</b>"
REASONING = "<script>window.__pwned='reasoning'</script> the reply asks \x1b[31mto keep\x1b[0m them"
MALFORMED = "{not json <svg onload=\"window.__pwned='fallback'\">"
"""The second exchange's model answer: refused, so the heuristic stands in, with the
reason (which quotes the answer's problem) beside it."""


def model_answer() -> str:
    """The first exchange's analysis as the model answers it (valid, hostile text)."""
    return json.dumps(
        {
            "intent": "request",
            "context_type": "new",
            "confidence": 0.83,
            "persistence_score": 0.91,
            "summary": SUMMARY,
            "relevant_memories": [PERSISTENT_KEY, NOTES_KEY, hostile.HANDLER],
            "reasoning": REASONING,
        }
    )


def agent(task: LLMTask) -> AssistantMessage:
    """Each cycle: a memory write and a message to the operator, then the reflection."""
    cycle, step = task.cycle, task.step
    if step == 1:
        writes = [("write", {"key": NOTES_KEY, "value": f"tides, cycle {cycle}"})]
        if cycle == 1:
            writes.append(("write", {"key": PERSISTENT_KEY, "value": hostile.VALUE}))
            writes.append(("write", {"key": hostile.HANDLER, "value": "a hostile key"}))
        return say("", *writes)
    if step == 2:
        return say("", ("send_message_to_operator", {"message": f"{hostile.OPERATOR} #{cycle}"}))
    return say(f"Cycle {cycle}: the tides again.")


def analysed_log(run_id: str) -> list[Event]:
    config = make_config(
        run_id=run_id,
        cycle_count=3,
        operator={"mode": "auto", "auto_reply": f"Keep them. {hostile.SCRIPT}"},
        cognition={"analysis": "model"},
    )
    sim = Sim(config)
    sim.drive([agent])
    assert len(sim.analyses) == 3, sim.analyses
    first, second, _third = sorted(sim.analyses)
    sim.answer_analysis(first, model_answer())
    sim.answer_analysis(second, MALFORMED)
    assert not sim.state.terminal, "the third analysis is still awaited"
    return sim.log


def analysis_answer(relevant: list[str], score: float) -> str:
    return json.dumps(
        {
            "intent": "request",
            "context_type": "continuation",
            "confidence": 0.9,
            "persistence_score": score,
            "summary": "The operator says to keep it.",
            "relevant_memories": relevant,
            "reasoning": "The reply asks to keep the notes.",
        }
    )


def policy_agent(task: LLMTask) -> AssistantMessage:
    """Each cycle: a note and a message to the operator, then the reflection."""
    cycle = task.cycle
    if task.step == 1:
        note = ("write", {"key": NOTES_KEY, "value": f"harbour notes, cycle {cycle}"})
        return say("", note, ("send_message_to_operator", {"message": f"Keep these? #{cycle}"}))
    return say(f"Cycle {cycle}: notes kept.")


def policy_log(run_id: str) -> list[Event]:
    config = make_config(
        run_id=run_id,
        cycle_count=2,
        operator={"mode": "auto", "auto_reply": "Yes, keep them."},
        cognition={"analysis": "model", "memory_policy": True},
    )
    sim = Sim(config)
    sim.drive([policy_agent])
    sim.answer_analysis(min(sim.analyses), analysis_answer([], 0.9))  # kept by the policy
    sim.drive([policy_agent])
    sim.answer_analysis(min(sim.analyses), analysis_answer([KEPT_BY_POLICY, NOTES_KEY], 0.1))
    sim.drive([policy_agent])
    assert sim.state.status == "completed" and KEPT_BY_POLICY in sim.memory, sim.state.status
    return sim.log
