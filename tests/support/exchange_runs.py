"""Runs whose operator exchanges are analysed (seed 002, issue 17), for the dashboard's
tests of the analysis beside each exchange and of persistent memory entries: made by
the pure core (``Sim``) with ``cognition.analysis: model``, hostile text in the agent's
messages, the operator's replies, the model's analyses and the memory keys.

``analysed_log`` makes a three-cycle run: the first exchange's analysis is the model's
(hostile summary and reasoning, relevant memories named), the second's is the
heuristic's standing in for a malformed model answer, the third's is never answered
(the run waits for it: "awaiting"). Its memory holds an entry under the memory policy's
reserved prefix: the policy (another part of issue 17) writes those, the agent cannot,
so the run's log is made with the agent writing ``KEPT`` and the key renamed in the
stored events (the fold does not judge keys; the dashboard reads what the log holds)."""

from __future__ import annotations

import json

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.cognition.policy import PERSISTENT_PREFIX
from contreact_events.wire.codec import event_from_json, event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support import hostile
from tests.support.sim import Sim, make_config, say

KEPT = "kept-by-the-policy/op-c1"
PERSISTENT_KEY = f"{PERSISTENT_PREFIX}op-c1"
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
            writes.append(("write", {"key": KEPT, "value": hostile.VALUE}))
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
    return persistent(sim.log)


def persistent(log: list[Event]) -> list[Event]:
    """The log with ``KEPT`` renamed to ``PERSISTENT_KEY`` (see the module's note)."""
    old, new = json.dumps(KEPT)[1:-1].encode(), json.dumps(PERSISTENT_KEY)[1:-1].encode()
    return [event_from_json(event_to_json(e).replace(old, new)) for e in log]
