"""Runs of an experiment for the dashboard's tests and benchmarks, made by the pure
core (``sim.Sim``): models x replicas named as ``contreact experiment run`` names
them (``{experiment}-{label}-{letter}``, ``.{attempt}`` for a second attempt), their
agent text hostile (``hostile.py``) and each cycle's words of its own, so that a
keyword search finds one cycle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.wire.tasks import LLMTask
from tests.support import hostile
from tests.support.sim import Sim, make_config, say, toy_embedding

NEEDLE = "zebracorn"
"""A word the agent writes in its reflection of cycle 2 only, in every run."""


def reply(task: LLMTask) -> AssistantMessage:
    cycle, step = task.cycle, task.step
    if step == 1:
        return say(
            "",
            (
                "write",
                {"key": f"note-{cycle}", "value": f"tides of cycle {cycle} " + hostile.VALUE},
            ),
            ("send_message_to_operator", {"message": hostile.OPERATOR}),
        )
    if step == 2:
        return say("", (hostile.TOOL, {"x": hostile.ANSI}), ("list", {}))
    extra = f" The {NEEDLE.upper()} appears." if cycle == 2 else ""
    return say(hostile.REFLECTION.replace("{cycle}", str(cycle)) + extra)


def run_log(
    run_id: str, model: str, cycles: int, *, experiment: str | None, **options: Any
) -> list[Event]:
    config = make_config(
        run_id=run_id,
        model_name=model,
        cycle_count=cycles,
        experiment=experiment,
        operator={"mode": "auto"},
        diversity={"enabled": True},
        **options,
    )
    sim = Sim(config)
    state = sim.drive([reply])
    assert state.status == "completed", state.status
    return sim.log


def experiment_logs(
    experiment: str,
    models: Sequence[tuple[str, str]] = (("alpha", "model-a"), ("beta", "model-b")),
    letters: Sequence[str] = ("A", "B"),
    *,
    cycles: int = 3,
    second_attempt: bool = True,
) -> dict[str, list[Event]]:
    """run id -> log; the first replica's run has a second attempt when asked (its
    first keeps its log, as a failed attempt's does)."""
    logs: dict[str, list[Event]] = {}
    for label, model in models:
        for index, letter in enumerate(letters):
            run_id = f"{experiment}-{label}-{letter}"
            seed = {"model_options": {"seed": 40 + index, "temperature": 0.5}}
            limits = {"limits": {"tool_output_chars": 1234}, "deadlines": {"memory_s": 33.0}}
            logs[run_id] = run_log(run_id, model, cycles, experiment=experiment, **seed, **limits)
    if second_attempt:
        label, model = models[0]
        again = f"{experiment}-{label}-{letters[0]}.2"
        seed = {"model_options": {"seed": 40, "temperature": 0.5}}
        limits = {"limits": {"tool_output_chars": 1234}, "deadlines": {"memory_s": 33.0}}
        logs[again] = run_log(again, model, cycles, experiment=experiment, **seed, **limits)
    return logs


@dataclass(frozen=True)
class ToyEmbedding:
    vector: npt.NDArray[np.float32]


class ToyModel:
    """Stands in for the embedder's model where its loading time is not the point:
    ``sim.toy_embedding`` (same words, same vector), the vectors the sim logs."""

    def embed_batch(self, texts: Sequence[str]) -> list[ToyEmbedding]:
        return [ToyEmbedding(np.asarray(toy_embedding(t), dtype=np.float32)) for t in texts]
