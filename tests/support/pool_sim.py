"""A run on a pool of hosts, built by the pure core (``Sim``): each answer records the
host that served it (``LLMResponded.host``, version 3), as the LLM worker does. Made
``tests/fixtures/runlog-v6-pool-host.jsonl``: a 3-cycle run on two hosts whose first
host died after its third call (the run moved to the second and stayed there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contreact_events.catalog.chat import AssistantMessage
from contreact_events.core.decide import Decision
from contreact_events.wire.codec import event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

POOL = ("http://gpu1:11434", "http://gpu2:11434")
MOVED_AFTER = 3
"""Calls served by the first host before it died."""


class PoolSim(Sim):
    def __init__(self, **config: Any) -> None:
        super().__init__(
            make_config(
                backend="ollama",
                ollama_client_config={"hosts": list(POOL)},
                operator={"mode": "auto"},
                **config,
            )
        )
        self.calls = 0

    def start(self) -> Decision:
        self.send("RunRequested", config=self.config.model_dump(mode="json"))
        check = self.task()
        return self.send(
            "ModelChecked", check.task_id, ok=True, backend="ollama", model=self.config.model_name
        )

    def answer_llm(self, message: AssistantMessage, **usage: Any) -> Decision:
        task = self.task()
        assert isinstance(task, LLMTask) and task.kind == "chat", task
        host = POOL[0] if self.calls < MOVED_AFTER else POOL[1]
        self.calls += 1
        return self.send(
            "LLMResponded",
            task.task_id,
            message=message.model_dump(mode="json"),
            usage=usage,
            model=self.config.model_name,
            host=host,
        )


def reply(task: LLMTask) -> AssistantMessage:
    if task.step == 1:
        return say("", ("write", {"key": f"note-{task.cycle}", "value": "kept"}))
    return say(f"Cycle {task.cycle}: I kept a note.")


def pool_run() -> PoolSim:
    sim = PoolSim(run_id="pool-host", cycle_count=3)
    state = sim.drive([reply])
    assert state.status == "completed", state.failure_reason
    return sim


def write_fixture(path: Path) -> None:
    """``python -c 'from tests.support.pool_sim import *; write_fixture(Path(...))'``."""
    lines = [event_to_json(event) for event in pool_run().log]
    path.write_bytes(b"\n".join(lines) + b"\n")
