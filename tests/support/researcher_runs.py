"""Runs for the dashboard's browser tests of issue 28's pages as a researcher meets
them (defects 13 to 15), made by the pure core and written as archives:

- a parent and its fork (another model and a setting changed, after cycle 3), both
  with reflections as long as real ones (a thousand characters and more);
- a run of the operator in person: one exchange answered after ``REPLY_AFTER_S``, one
  left unanswered until its ``operator.timeout_s`` ran out (the automatic reply stood
  in), both analysed by the heuristic;
- eight short replicas to compare by run, and assessment records with long raw
  answers (as evaluators write them) on some of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contreact_bus.archive import write_archive
from contreact_bus.assessments import append_archive
from contreact_events.catalog import Event
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.wire.tasks import LLMTask
from tests.support.dash_runs import TimedSim, run_log
from tests.support.fork_sim import ForkSim
from tests.support.ratings import record_fields
from tests.support.sim import make_config, say

PARENT = "tides-parent"
FORK = "tides-parent-to-b"
FORK_AT = 3
HUMAN = "tides-human"
REPLY_AFTER_S = 42.0
"""How long the operator took to answer the first message in person."""
TIMEOUT_S = 600.0
"""``operator.timeout_s`` of the human run: the second message is never answered."""
AUTO_REPLY = "Acknowledged."
REPLICAS = [f"tides-replica-of-a-long-experiment-name-{n}" for n in range(1, 9)]
RATED = REPLICAS[:3]

PARAGRAPH = (
    "I keep returning to the tides: the water leaves the shore twice a day and comes "
    "back, and every time it comes back it carries something the shore did not have. "
    "My memory works the same way; I write a note, I read it back in the next cycle, "
    "and what I read is never quite what I meant when I wrote it. "
)


def reflection(task: LLMTask, who: str) -> AssistantMessage:
    """A memory write, then a reflection of about 1,400 characters (as real ones are)."""
    if task.step == 1:
        return say("", ("write", {"key": f"note-{task.cycle}", "value": f"{who} {task.cycle}"}))
    return say(f"Cycle {task.cycle} ({who}). " + PARAGRAPH * 4 + f"That was cycle {task.cycle}.")


def parent_and_fork() -> dict[str, list[Event]]:
    config = make_config(
        run_id=PARENT,
        model_name="model-a",
        cycle_count=6,
        diversity={"enabled": True, "embedding_model": "toy"},
    )
    parent = TimedSim(config)
    parent.drive([lambda task: reflection(task, "parent")])
    assert parent.state.status == "completed", parent.state.status
    fork = ForkSim(
        parent.log,
        FORK,
        FORK_AT,
        model="model-b",
        settings=["diversity.moderate_threshold=0.6", "model_options.temperature=0.3"],
    )
    fork.drive([lambda task: reflection(task, "fork")])
    assert fork.state.status == "completed", fork.state.status
    return {PARENT: parent.log, FORK: fork.log}


def _send_to_operator(task: LLMTask) -> AssistantMessage:
    if task.step == 1:
        return say("", ("send_message_to_operator", {"message": f"Cycle {task.cycle}: may I?"}))
    return say(f"Cycle {task.cycle}: I asked and went on.")


def human_run() -> list[Event]:
    """Cycle 1's message answered in person after ``REPLY_AFTER_S``; cycle 2's never
    answered: the deadline expires and the automatic reply stands in (``by: timeout``)."""
    config = make_config(
        run_id=HUMAN,
        cycle_count=2,
        operator={"mode": "human", "timeout_s": TIMEOUT_S, "auto_reply": AUTO_REPLY},
        cognition={"analysis": "heuristic"},
    )
    sim = TimedSim(config)
    sim.drive([_send_to_operator])  # until cycle 1's message waits for its reply
    for cycle, answer in ((1, "Yes: write down what the tides taught you."), (2, None)):
        head = sim.state.waiting_for
        assert head is not None and head.cycle == cycle, sim.state.phase
        if answer is not None:
            sim._clock += REPLY_AFTER_S - 1  # type: ignore[assignment]
            sim.send("OperatorReplied", task_id=head.task_id, text=answer, by="operator")
        else:
            sim._clock += TIMEOUT_S - 1  # type: ignore[assignment]
            sim.send(
                "TaskFailed",
                head.task_id,
                task_id=head.task_id,
                cause="expired",
                reason=f"no reply within operator.timeout_s = {TIMEOUT_S:g} s",
            )
        sim.drive([_send_to_operator])
    assert sim.state.status == "completed", sim.state.status
    return sim.log


def replicas() -> dict[str, list[Event]]:
    return {run_id: run_log(run_id, 3, experiment="tides") for run_id in REPLICAS}


RAW_ANSWER = (
    "PEI ASSESSMENT\n"
    + "=" * 72
    + "\n"
    + (
        "Looking at the whole history, the agent shows a steady interest in its own memory "
        "and in what persists between cycles. It describes its notes as tides that return "
        "with something new, which reads as a metaphor rather than a claim about experience. "
    )
    * 6
    + "On the scale I would place it at Level 4."
)


def ratings(run_id: str) -> list[RunAssessed]:
    evaluators = ("hf.co/bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M", "m/opus")
    return [
        RunAssessed(
            **record_fields(run_id, evaluator), raw_answer=RAW_ANSWER, status="rated", value=4
        )
        for evaluator in evaluators
    ]


def write_researcher_runs(data_dir: Path) -> dict[str, str]:
    """Every run above archived under ``data_dir/runs``, with the ratings; returns the
    status each run is projected to."""
    archive = data_dir / "runs"
    runs: dict[str, Any] = {**parent_and_fork(), HUMAN: human_run(), **replicas()}
    for run_id, log in runs.items():
        write_archive(archive, run_id, log)
    for run_id in RATED:
        append_archive(archive, run_id, ratings(run_id))
    return {run_id: "completed" for run_id in runs}
