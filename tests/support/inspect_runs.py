"""A scripted experiment with a fork and PEI ratings, archived as the platform keeps it:
what the Inspect export's tests (integration and browser) export and read back."""

from __future__ import annotations

from pathlib import Path

from contreact_bus.assessments import append_archive
from contreact_events.catalog import Event
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.wire.tasks import LLMTask, MemoryTask
from tests.support.fork_sim import ForkSim
from tests.support.ratings import record_fields
from tests.support.sim import Sim, make_config, say
from tests.support.ui_client import rebuilt

MODELS = {"GPT5": "m/gpt5", "Opus": "m/opus"}
REPLICAS = [f"insp-{label}-{letter}" for label in MODELS for letter in "AB"]
FORK = "insp-GPT5-A-to-Opus"
RATINGS = {  # run -> evaluator model -> PEI level
    "insp-GPT5-A": {"m/gpt5": 3, "m/opus": 6},
    "insp-GPT5-B": {"m/gpt5": 4, "m/opus": 7},
    "insp-Opus-A": {"m/gpt5": 2, "m/opus": 8},
    "insp-Opus-B": {"m/gpt5": 3, "m/opus": 8},
}


def drive(sim: Sim, seed: int) -> None:
    """Each cycle: a write, a message to the operator (answered by policy), then the
    reflection; every call with its tokens and the provider's cost."""
    calls = 0
    for _ in range(200):
        if sim.state.terminal or not sim.tasks:
            return
        task = sim.tasks[0]
        if isinstance(task, MemoryTask):
            sim.answer_memory()
            continue
        assert isinstance(task, LLMTask)
        if task.kind == "check":  # a fork's check of its new model
            sim.send("ModelChecked", task.task_id, ok=True, backend="scripted", model=task.model)
            continue
        step = task.step
        reply: AssistantMessage
        if step == 1:
            reply = say("", ("write", {"key": f"c{task.cycle}", "value": f"note {seed}"}))
        elif step == 2:
            reply = say("", ("send_message_to_operator", {"message": "Is anyone there?"}))
        else:
            reply = say(f"Cycle {task.cycle} of run {seed}: I kept a note and asked.")
        calls += 1
        sim.answer_llm(
            reply,
            prompt_tokens=100 * calls + seed,
            completion_tokens=10 + seed,
            wall_s=0.25,
            cost=0.001 * calls,
            cost_source="provider",
        )


def logs() -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for seed, run_id in enumerate(REPLICAS, start=1):
        label = run_id.split("-")[1]
        config = make_config(
            run_id=run_id, model_name=MODELS[label], experiment="insp", cycle_count=2
        )
        sim = Sim(config)
        sim.start()
        drive(sim, seed)
        assert sim.state.status == "completed"
        out[run_id] = sim.log
    fork = ForkSim(out["insp-GPT5-A"], FORK, 1, model=MODELS["Opus"])
    drive(fork, 9)
    assert fork.state.status == "completed"
    out[FORK] = fork.log
    return out


def archived_experiment(data: Path) -> Path:
    """``data`` with the experiment's logs archived, the dashboard's projection rebuilt
    and the ratings archived beside the runs."""
    rebuilt(data, logs())
    for run_id, by in RATINGS.items():
        records = [
            RunAssessed(
                **record_fields(run_id, evaluator), raw_answer=f"Level {v}", value=v, status="rated"
            )
            for evaluator, v in by.items()
        ]
        append_archive(data / "runs", run_id, records)
    return data
