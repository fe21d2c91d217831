"""A scripted 2-model x 3-replica experiment, played through the core by ``Sim`` (the
workers' part included), with figures simple enough to compute by hand.

Every run has ``CYCLES`` cycles. Replica A, B, C has factor k = 1, 2, 3.

* ``alpha``: each cycle, one answer writing ``k{cycle}`` (a value of 10k characters),
  then the reflection: ``50k`` characters. Per run: 3 memory operations, 0 messages, 3
  keys, 150k reflection and response characters, 30k memory-write characters; 2 LLM
  calls per cycle.
* ``beta``: each cycle, one answer writing ``shared`` (always the same 5 characters) and
  reading it, one answer messaging the operator (answered by the automatic policy), then
  the reflection: ``20k`` characters. Per run: 6 memory operations, 3 messages, 1 key,
  60k reflection and response characters, 15 memory-write characters; 3 LLM calls per
  cycle.

Sim answers every LLM call with 10 prompt and 5 completion tokens.
"""

from __future__ import annotations

from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

EXPERIMENT = "paper-check"
CYCLES = 3
REPLICAS = ("A", "B", "C")
MODELS = ("alpha", "beta")


def alpha(k: int, extra: str = "") -> Any:
    def reply(task: LLMTask) -> AssistantMessage:
        if task.step == 1:
            return say("", ("write", {"key": f"k{task.cycle}", "value": "v" * (10 * k)}))
        return say(extra + "R" * (50 * k - len(extra)))

    return reply


def beta(k: int, extra: str = "") -> Any:
    def reply(task: LLMTask) -> AssistantMessage:
        if task.step == 1:
            return say(
                "", ("write", {"key": "shared", "value": "12345"}), ("read", {"key": "shared"})
            )
        if task.step == 2:
            return say("", ("send_message_to_operator", {"message": extra or "hello"}))
        return say(extra + "S" * (20 * k - len(extra)))

    return reply


def run_id(model: str, replica: str, experiment: str = EXPERIMENT) -> str:
    return f"{experiment}-{model}-{replica}"


def experiment_logs(
    *, experiment: str = EXPERIMENT, cycles: int = CYCLES, extra: str = "", diversity: bool = True
) -> dict[str, list[Event]]:
    """run id -> its log, for every model and replica (``extra``: text put at the start
    of every reflection and operator message, e.g. hostile text)."""
    logs = {}
    for model, script in (("alpha", alpha), ("beta", beta)):
        for k, replica in enumerate(REPLICAS, start=1):
            config = make_config(
                run_id=run_id(model, replica, experiment),
                model_name=f"{model}-model",
                experiment=experiment,
                cycle_count=cycles,
                diversity={"enabled": diversity},
            )
            sim = Sim(config)
            state = sim.drive([script(k, extra)])
            assert state.status == "completed", state.failure_reason
            logs[config.run_id] = sim.log
    return logs


def expected_run(model: str, k: int, cycles: int = CYCLES) -> dict[str, float]:
    """Table 1 of one run, computed by hand from the script above."""
    if model == "alpha":
        return {
            "memory_tools": 1.0 * cycles,
            "messages": 0.0,
            "memory_keys": float(cycles),
            "reflection_kchars": 50 * k * cycles / 1000,
            "response_kchars": 50 * k * cycles / 1000,
            "memory_write_kchars": 10 * k * cycles / 1000,
        }
    return {
        "memory_tools": 2.0 * cycles,
        "messages": 1.0 * cycles,
        "memory_keys": 1.0,
        "reflection_kchars": 20 * k * cycles / 1000,
        "response_kchars": 20 * k * cycles / 1000,
        "memory_write_kchars": 5 * cycles / 1000,
    }
