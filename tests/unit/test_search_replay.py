"""``search_memory``'s ranking changed (cosine alone up to contreact-embedder 0.1.0,
hybrid since 0.2.0; docs/cognition.md): a recorded run still replays exactly, because
the search's output is an input logged in its ``ToolCallCompleted`` and replay takes it
from there, never searching again. A pure Sim run answered with each output format."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.decide import Decision
from contreact_events.core.fold import fold_all
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import EmbedTask, LLMTask
from tests.support.sim import Sim, make_config, say

COSINE_OUTPUT = "Closest to 'the moon', most similar first:\n1. memory 'tides' (similarity 0.63): x"
HYBRID_OUTPUT = (
    "Best matches for 'the moon', best first (method: hybrid: meaning, shared words and "
    "recency):\n1. memory 'tides' (score 0.71; meaning 0.63, words 1.00, recency 0.98): x"
)


class SearchSim(Sim):
    def __init__(self, output: str) -> None:
        super().__init__(make_config(tools={"search_memory": True}, cycle_count=1))
        self.output = output
        self.prompts: list[LLMTask] = []

    def send(self, kind: str, causation: str | None = None, **data: Any) -> Decision:
        decision = super().send(kind, causation, **data)
        self.prompts += [t for t in decision.tasks if isinstance(t, LLMTask)]
        return decision

    def answer_embedding(self) -> Decision:
        task = self.task()
        if isinstance(task, EmbedTask) and task.kind == "search":
            return self.send(
                "ToolCallCompleted",
                task.task_id,
                task_id=task.task_id,
                tool_name="search_memory",
                output=self.output,
                ok=True,
            )
        return super().answer_embedding()


@pytest.mark.parametrize("output", [COSINE_OUTPUT, HYBRID_OUTPUT], ids=["cosine", "hybrid"])
def test_a_run_with_a_search_replays_and_rebuilds_from_its_log(output: str) -> None:
    sim = SearchSim(output)
    state = sim.drive(
        [
            say("", ("write", {"key": "tides", "value": "x"})),
            say("", ("search_memory", {"query": "the moon"})),
            say("I searched."),
        ]
    )
    assert state.status == "completed"
    (result,) = [
        e for e in sim.log if isinstance(e, ToolCallCompleted) and e.tool_name == "search_memory"
    ]
    assert result.output == output  # recorded as given
    after = sim.prompts[-1].messages[-1]
    assert after.role == "tool" and after.content == output  # what the model then read
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.state == fold_all(sim.log) == state
