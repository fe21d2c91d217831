"""The paper's model swap as an experiment file's ``fork`` section makes it, built by the
pure core (``Sim``, ``ForkSim``): models x replicas named as ``contreact experiment
run`` names them (``{experiment}-{label}-{letter}``), each replica forked after cycle
``at_cycle`` to every other model (``{parent run}-to-{LABEL}``, the target's model), and
the experiment's record as ``experiment run`` writes it (``ReplicaEntry`` per replica
and per fork). Each cycle's reflection has a length of its own (``REFLECTION_CHARS``),
so a test can tell a fork's own cycles from those it copied from its parent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from contreact_bus.experiments import ReplicaEntry
from contreact_events.catalog import Event
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say

MODELS = (("A", "model-a"), ("B", "model-b"))
TS = datetime(2026, 11, 28, 8, 0, tzinfo=UTC)


def reflection(model: str, cycle: int) -> str:
    """Model ``a`` writes 10 characters a cycle, model ``b`` 1,000: a fork's own cycles
    and the cycles it copied are told apart by their length."""
    width = 10 if model.endswith("a") else 1000
    return f"c{cycle}".ljust(width, ".")


def reply(task: LLMTask) -> AssistantMessage:
    if task.step == 1:
        return say("", ("write", {"key": f"k{task.cycle}", "value": "v"}))
    return say(reflection(task.model, task.cycle))


@dataclass
class Swap:
    """An experiment's logs and its record."""

    experiment: str
    logs: dict[str, list[Event]] = field(default_factory=dict)
    entries: list[ReplicaEntry] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)
    """The fork runs' ids."""
    superseded: list[str] = field(default_factory=list)
    """Failed earlier attempts of replicas that ran again."""

    @property
    def replicas(self) -> list[str]:
        """Each replica's current run."""
        return [r for r in self.logs if r not in self.forks and r not in self.superseded]


def swap(
    experiment: str = "swap",
    models: Sequence[tuple[str, str]] = MODELS,
    letters: Sequence[str] = ("A", "B"),
    *,
    cycles: int = 3,
    at_cycle: int = 2,
    fork_cycles: int = 4,
    forks: bool = True,
    retried: Sequence[str] = (),
) -> Swap:
    """Every replica, and (``forks``) its fork after ``at_cycle`` to each other model.
    ``retried``: replicas (``B-B``) whose first attempt failed; their second (``.2``)
    is the current one, and the one forked."""
    out = Swap(experiment)
    current: dict[tuple[str, str], str] = {}
    for label, model in models:
        for letter in letters:
            run_id = f"{experiment}-{label}-{letter}"
            attempt = 1
            if f"{label}-{letter}" in retried:
                out.logs[run_id] = failed_log(run_id, model, experiment)
                out.superseded.append(run_id)
                run_id, attempt = f"{run_id}.2", 2
            current[(label, letter)] = run_id
            config = make_config(
                run_id=run_id,
                model_name=model,
                experiment=experiment,
                cycle_count=cycles,
                operator={"mode": "auto"},
            )
            sim = Sim(config)
            assert sim.drive([reply]).status == "completed"
            out.logs[run_id] = sim.log
            out.entries.append(
                ReplicaEntry(f"{label}-{letter}", label, letter, model, run_id, attempt, "d")
            )
    if not forks:
        return out
    for label, _model in models:
        for letter in letters:
            parent = current[(label, letter)]
            for target, target_model in models:
                if target == label:
                    continue
                child = f"{parent}-to-{target}"
                out.logs[child] = fork_log(
                    out.logs[parent], child, at_cycle, target_model, fork_cycles
                )
                out.forks.append(child)
                out.entries.append(
                    ReplicaEntry(
                        f"{label}-{letter}-to-{target}",
                        f"{label}-to-{target}",
                        letter,
                        target_model,
                        child,
                        1,
                        "d",
                    )
                )
    return out


def failed_log(run_id: str, model: str, experiment: str) -> list[Event]:
    """A replica's attempt whose first LLM call failed for good (its replica ran again)."""
    sim = Sim(make_config(run_id=run_id, model_name=model, experiment=experiment, cycle_count=3))
    sim.start()
    sim.send("LLMFailed", sim.task().task_id, error="the model server went away", attempts=3)
    assert sim.state.status == "failed", sim.state.status
    return sim.log


def fork_log(
    parent: Sequence[Event], child: str, at_cycle: int, model: str, cycles: int
) -> list[Event]:
    sim = ForkSim(parent, child, at_cycle, model=model, settings=(f"cycle_count={cycles}",))
    assert sim.drive([reply]).status == "completed"
    return sim.log


def rating(
    run_id: str, evaluator: str, value: int | None, status: str = "rated", repeat: int = 1
) -> RunAssessed:
    """An evaluator's answer to the PEI: ``value`` rated, or none (``status`` says why)."""
    return RunAssessed(
        event_id=f"{run_id}|{evaluator}|{repeat}",
        run_id=run_id,
        ts=TS,
        correlation_id=run_id,
        instrument="pei",
        instrument_version="1",
        instrument_sha256="a" * 64,
        evaluator=evaluator,
        repeat=repeat,
        input_sha256="b" * 64,
        run_digest="c" * 64,
        run_events=10,
        job_id=f"job|{run_id}|{evaluator}|{repeat}",
        raw_answer=f"Level {value}" if value else "no idea",
        status=status,
        value=value,
    )


def ratings(
    experiment: str, runs: Sequence[str], models: Sequence[tuple[str, str]] = MODELS
) -> list[RunAssessed]:
    """Every model rates every run: model-a gives 2 to A's histories, 6 to the others;
    model-b 7 to B's, 3 to the others; a fork's history (a mix) 5 from both. Integer
    levels, so every cell mean is exact."""
    out = []
    for run_id in runs:
        fork = "-to-" in run_id
        label = run_id[len(experiment) + 1 :].split("-")[0]
        for index, (evaluator_label, model) in enumerate(models):
            own = label == evaluator_label
            if fork:
                value = 5
            elif index == 0:
                value = 2 if own else 6
            else:
                value = 7 if own else 3
            out.append(rating(run_id, model, value))
    return out
