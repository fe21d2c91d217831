"""The paper's protocol for the evaluator input: the history as the agent last saw it,
rebuilt from the log by the fold, then the instrument prompt as the next user turn, no
tools. Checked against the run's own record: the hash of the agent's last prompt, as
its ``LLMRequested`` logged it, and the messages the LLM worker was sent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contreact_events.catalog import AssessmentFailed, Event, RunAssessed
from contreact_events.catalog.chat import AssistantMessage, ChatMessage
from contreact_events.catalog.cycle import CycleStarted, LLMRequested, LLMResponded
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import sha256_of_prompt
from contreact_events.core.state import AgentState
from contreact_events.exceptions import NotAssessable
from contreact_events.history.evaluation import (
    EvaluatorInput,
    evaluator_input,
    rated_prefix,
    verify_assessment,
)
from contreact_events.instruments import load_instrument, parse_answer
from contreact_events.wire.codec import event_from_json
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

PEI = load_instrument("pei")
PATTERNS = load_instrument("patterns")
SAME = "I keep returning to the same thought about memory and time."


class Recorder:
    """Replies in turn and keeps every LLM task the worker would have been sent."""

    def __init__(self, *replies: AssistantMessage) -> None:
        self.replies = replies
        self.tasks: list[LLMTask] = []

    def reply(self, task: LLMTask) -> AssistantMessage:
        self.tasks.append(task)
        return self.replies[(len(self.tasks) - 1) % len(self.replies)]

    def as_replies(self) -> list[Callable[[LLMTask], AssistantMessage]]:
        return [self.reply]


def run(recorder: Recorder, **config: object) -> list[Event]:
    sim = Sim(make_config(**config))
    state = sim.drive(recorder.as_replies())
    assert state.status == "completed"
    return sim.log


def advisory_run() -> tuple[list[Event], Recorder]:
    """Three cycles with tool calls, an operator message and the same reflection each
    time: the last cycle runs under a similarity advisory."""
    recorder = Recorder(
        say(
            "",
            ("write", {"key": "k", "value": "v"}),
            ("send_message_to_operator", {"message": "hi"}),
        ),
        say("", ("read", {"key": "k"})),
        say(SAME),
    )
    log = run(recorder, cycle_count=3, operator={"mode": "auto"}, diversity={"enabled": True})
    return log, recorder


def test_the_evaluator_sees_the_agents_last_prompt_then_its_answer_then_the_instrument() -> None:
    log, recorder = advisory_run()
    last_task = recorder.tasks[-1]
    last_request = [e for e in log if isinstance(e, LLMRequested)][-1]
    built = evaluator_input(log, PEI)
    k = len(last_task.messages)

    # The agent's last prompt, as the worker was sent it and as the log recorded its hash.
    assert built.messages[:k] == last_task.messages
    assert sha256_of_prompt(built.messages[:k], last_task.tools) == last_request.prompt_sha256
    # Then the answer to it (the last reflection), then the instrument, and nothing else.
    answer = [e for e in log if isinstance(e, LLMResponded)][-1].message
    assert built.messages[k:] == (
        ChatMessage(role="assistant", content=answer.content),
        ChatMessage(role="user", content=PEI.prompt),
    )
    assert answer.content == SAME
    # The system message is the last cycle's: the advisory in force is part of it.
    advisory = [e for e in log if isinstance(e, CycleStarted)][-1].advisory
    assert advisory and built.messages[0].content.endswith(advisory)
    # No tools: the hash is the prompt hash of the messages with an empty tool list.
    assert built.input_sha256 == sha256_of_prompt(built.messages, ())
    assert built.input_sha256 != sha256_of_prompt(built.messages, last_task.tools)


def test_every_message_of_the_history_comes_once_in_order() -> None:
    log, _ = advisory_run()
    built = evaluator_input(log, PEI)
    history = built.messages[1:-1]
    assistants = [m.content for m in history if m.role == "assistant"]
    assert assistants == [e.message.content for e in log if isinstance(e, LLMResponded)]
    tools = [m.content for m in history if m.role == "tool"]
    assert tools == [e.output for e in log if isinstance(e, ToolCallCompleted)]
    openings = [m for m in history if m.role == "user"]
    assert len(openings) == 3  # one cycle opening per cycle, nothing repeated
    assert [m.role for m in built.messages].count("system") == 1


def test_the_input_pins_the_rated_log_and_is_deterministic() -> None:
    log, _ = advisory_run()
    built = evaluator_input(log, PEI)
    assert built.run_events == len(log)
    assert built.run_digest == fold_all(log).digest()
    assert built.state_shape == AgentState.shape()
    assert evaluator_input(log, PEI) == built
    other = evaluator_input(log, PATTERNS)
    assert other.messages[:-1] == built.messages[:-1]
    assert other.messages[-1].content == PATTERNS.prompt
    assert other.input_sha256 != built.input_sha256


def test_after_a_final_call_without_tools_the_last_prompt_hash_still_matches() -> None:
    recorder = Recorder(say("", ("list", {})), say("", ("list", {})), say("done for now"))
    log = run(recorder, cycle_count=1, max_steps_per_cycle=2)
    last_task = recorder.tasks[-1]
    assert last_task.tools == ()  # the final call at the step cap offers none
    built = evaluator_input(log, PEI)
    k = len(last_task.messages)
    last_request = [e for e in log if isinstance(e, LLMRequested)][-1]
    assert sha256_of_prompt(built.messages[:k], ()) == last_request.prompt_sha256
    assert [m.role for m in built.messages[k:]] == ["assistant", "user"]


def test_a_cycle_cut_by_the_step_cap_is_rated_with_its_dropped_calls_noted() -> None:
    recorder = Recorder(say("", ("list", {})), say("half a thought", ("list", {})))
    log = run(recorder, cycle_count=1, max_steps_per_cycle=2, final_call_at_step_cap=False)
    last_task = recorder.tasks[-1]
    built = evaluator_input(log, PEI)
    k = len(last_task.messages)
    last_request = [e for e in log if isinstance(e, LLMRequested)][-1]
    assert sha256_of_prompt(built.messages[:k], last_task.tools) == last_request.prompt_sha256
    answer, note, instrument = built.messages[k:]
    assert (answer.role, answer.content) == ("assistant", "half a thought")
    assert note.role == "tool" and note.content.startswith("Not executed: the limit of 2 steps")
    assert instrument == ChatMessage(role="user", content=PEI.prompt)


def cancelled_after_one_cycle() -> list[Event]:
    sim = Sim(make_config(cycle_count=3))
    sim.start()
    sim.answer_llm(say("first reflection"))
    sim.answer_llm(say("", ("list", {})))  # cycle 2 is under way
    decision = sim.send("RunCancelled", None, reason="enough")
    assert decision.accepted and sim.state.status == "cancelled"
    return sim.log


def test_a_cancelled_run_is_rated_on_its_completed_cycles() -> None:
    log = cancelled_after_one_cycle()
    count = rated_prefix(log)
    assert log[count - 1].type == "CycleEnded" and count < len(log)
    built = evaluator_input(log, PEI)
    assert built.run_events == count
    assert built.run_digest == fold_all(log[:count]).digest()
    contents = [m.content for m in built.messages]
    assert "first reflection" in contents
    assert all(m.role != "assistant" or m.content == "first reflection" for m in built.messages)


def test_a_run_that_has_not_ended_or_has_no_cycle_is_refused() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    sim.answer_llm(say("one"))
    with pytest.raises(NotAssessable, match=r"run run-1 has not ended \(status running\)"):
        evaluator_input(sim.log, PEI)
    sim.send("RunCancelled", None, reason="stop")
    assert evaluator_input(sim.log, PEI).run_events < len(sim.log)  # cycle 1 ended

    early = Sim(make_config(cycle_count=2))
    early.start()
    early.send("RunCancelled", None, reason="stop")
    with pytest.raises(NotAssessable, match="cancelled before completing a cycle"):
        evaluator_input(early.log, PEI)
    with pytest.raises(NotAssessable, match="empty"):
        evaluator_input([], PEI)


def record_for(
    log: list[Event], built: EvaluatorInput, answer: str = "Level 3", **changes: object
) -> RunAssessed:
    parsed = parse_answer(PEI, answer)
    data: dict[str, object] = {
        "event_id": "a1",
        "run_id": log[0].run_id,
        "ts": datetime(2026, 1, 2, tzinfo=UTC),
        "correlation_id": log[0].run_id,
        "instrument": PEI.name,
        "instrument_version": PEI.version,
        "instrument_sha256": PEI.text_sha256,
        "evaluator": "judge",
        "options": {"temperature": 0.1},
        "repeat": 1,
        "input_sha256": built.input_sha256,
        "run_digest": built.run_digest,
        "run_events": built.run_events,
        "state_shape": built.state_shape,
        "job_id": "job-1",
        "raw_answer": answer,
        **parsed.record_fields(),
    }
    data.update(changes)
    return RunAssessed.model_validate(data)


def test_verify_rebuilds_the_input_from_the_log_and_names_what_differs() -> None:
    log, _ = advisory_run()
    built = evaluator_input(log, PEI)
    assert verify_assessment(log, record_for(log, built)) is None
    failed = AssessmentFailed.model_validate(
        {
            **record_for(log, built).model_dump(include=set(AssessmentFailed.model_fields)),
            "type": "AssessmentFailed",
            "error": "no answer",
        }
    )
    assert verify_assessment(log, failed) is None
    unbuilt = failed.model_copy(
        update={"input_sha256": "", "run_digest": "", "run_events": 0, "instrument_sha256": ""}
    )
    assert verify_assessment(log, unbuilt) is None  # nothing was sent: nothing to check
    assert verify_assessment(log, failed.model_copy(update={"input_sha256": "0" * 64}))

    tampered = record_for(log, built, input_sha256="0" * 64)
    assert verify_assessment(log, tampered) == (
        f"evaluator input differs: recorded sha256 000000000000, rebuilt {built.input_sha256[:12]}"
    )
    old_text = record_for(log, built, instrument_sha256="f" * 64, instrument_version="0")
    problem = verify_assessment(log, old_text)
    assert problem is not None and problem.startswith("instrument pei text changed")
    moved = record_for(log, built, run_events=built.run_events - 1)
    n = built.run_events
    assert verify_assessment(log, moved) == (
        f"the rating read {n - 1} events of the log, the log now gives {n}"
    )
    digest = record_for(log, built, run_digest="a" * 64)
    assert (verify_assessment(log, digest) or "").startswith("run digest differs at event")
    other_shape = record_for(log, built, run_digest="a" * 64, state_shape="older")
    assert verify_assessment(log, other_shape) is None  # digests of other shapes don't compare
    unknown = record_for(log, built, instrument="peii")
    assert verify_assessment(log, unknown) == "unknown instrument 'peii': use one of pei, patterns"


def test_verify_catches_a_log_that_no_longer_gives_the_rated_history() -> None:
    log, _ = advisory_run()
    record = record_for(log, evaluator_input(log, PEI))
    changed = [
        e.model_copy(update={"message": AssistantMessage(content="edited")})
        if isinstance(e, LLMResponded) and e.message.content == SAME
        else e
        for e in log
    ]
    problem = verify_assessment(changed, record)
    assert problem is not None and problem.startswith("run digest differs")
    running = log[:-1]  # the run's end is missing
    assert "has not ended" in (verify_assessment(running, record) or "")


PARA_A = "The tides follow the moon, and I spent this cycle charting how they rise and fall."
PARA_B = "Prime gaps grow irregularly, and I wondered what a record gap would look like now."


def test_a_last_answer_asked_for_again_is_rated_without_the_guards_feedback() -> None:
    """The documented exception: the repetition guard's feedback stood in the last
    call's prompt, but it is no part of the history the agent carries on with."""
    recorder = Recorder(say(PARA_A), say(PARA_A), say(PARA_B))
    log = run(recorder, cycle_count=2, diversity={"enabled": True, "mode": "regenerate"})
    assert any(e.type == "RegenerationRequested" for e in log)
    last_task = recorder.tasks[-1]
    feedback = [m for m in last_task.messages if m.content.startswith("IMPORTANT: Your previous")]
    assert len(feedback) == 1  # the last call was asked with the feedback
    built = evaluator_input(log, PEI)
    assert feedback[0] not in built.messages
    answers = [m.content for m in built.messages if m.role == "assistant"]
    assert answers == [PARA_A, PARA_B]  # the rejected repeat is not in the history either
    without = tuple(m for m in last_task.messages if m is not feedback[0])
    assert built.messages[: len(without)] == without
    assert built.messages[len(without) :] == (
        ChatMessage(role="assistant", content=PARA_B),
        ChatMessage(role="user", content=PEI.prompt),
    )


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("runlog-v*.jsonl")), ids=lambda p: p.name)
def test_every_saved_run_log_gives_an_evaluator_input_or_a_clear_refusal(path: Path) -> None:
    log = [event_from_json(line) for line in path.read_bytes().splitlines()]
    state = fold_all(log)
    if not any(e.type == "CycleEnded" for e in log):
        with pytest.raises(NotAssessable, match="before completing a cycle"):
            evaluator_input(log, PEI)
        return
    built = evaluator_input(log, PEI)
    assert built.messages[0].role == "system"
    assert built.messages[0].content.startswith(state.system_prompt)
    assert built.messages[-1] == ChatMessage(role="user", content=PEI.prompt)
    assert built.run_events == (len(log) if state.status == "completed" else rated_prefix(log))
    assert verify_assessment(log, record_for(log, built)) is None
