"""The opt-in "relevant memories" prompt block (``cognition.memory_block``), in the pure
core: before each cycle the run's memories are retrieved for its last reflection (a
task for the embedder; here ``Sim`` plays it with toy vectors and the real ranking), the
answer is logged with every key, value and score, and the system prompt is built from
the log alone, so replay reproduces it exactly, and a log edited after the fact is
caught. A retrieval that keeps failing leaves the cycle without its block, the reason
logged. The heuristic analysis names relevant memories from the block."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contreact_events.catalog.cognition import MemoriesRetrieved
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import MEMORY_BLOCK_HEADING, sha256_of_prompt
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import EmbedTask, LLMTask
from tests.support.sim import Sim, make_config, say

WRITES = [
    say("", ("write", {"key": "boat", "value": "The boat is moored at the north harbour."})),
    say("", ("write", {"key": "bread", "value": "Bread recipe: flour, water and salt."})),
    say("", ("write", {"key": "gate", "value": "The harbour gate code is 4471."})),
]
REFLECT = say("I noted where the boat is moored in the harbour.")


def block_sim(cycles: int = 2, **cognition: Any) -> Sim:
    return Sim(
        make_config(
            cycle_count=cycles, cognition={"memory_block": True, "memory_block_k": 2, **cognition}
        )
    )


def retrievals(sim: Sim) -> list[MemoriesRetrieved]:
    return [e for e in sim.log if isinstance(e, MemoriesRetrieved)]


def chat_tasks(sim: Sim) -> list[LLMTask]:
    seen: list[LLMTask] = []
    original = sim.send

    def send(kind: str, causation: str | None = None, **data: Any) -> Any:
        decision = original(kind, causation, **data)
        seen.extend(t for t in decision.tasks if isinstance(t, LLMTask) and t.kind == "chat")
        return decision

    sim.send = send  # type: ignore[method-assign]
    return seen


def test_off_by_default_no_retrieval_and_no_block() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.drive([*WRITES, REFLECT])
    assert sim.state.status == "completed"
    assert not any(e.type.startswith("Memories") for e in sim.log)


def test_each_cycle_starts_with_a_logged_retrieval_and_the_prompt_shows_it() -> None:
    sim = block_sim()
    sent = chat_tasks(sim)
    sim.drive([*WRITES, REFLECT])
    assert sim.state.status == "completed"
    types = [e.type for e in sim.log]
    first, second = retrievals(sim)
    # Cycle 1: nothing written yet, so no block; asked for before CycleStarted.
    assert types.index("MemoriesRetrievalRequested") < types.index("CycleStarted")
    assert first.cycle == 1 and first.memories == ()
    assert MEMORY_BLOCK_HEADING not in sent[0].messages[0].content
    # Cycle 2: ranked against cycle 1's reflection, the best two of three shown.
    assert second.cycle == 2 and second.memories[0].key == "boat"
    assert len(second.memories) == 2
    assert all(m.keyword >= 0 and m.recency > 0 and m.cosine is not None for m in second.memories)
    cycle_2 = sent[-1]
    system = cycle_2.messages[0].content
    assert system.endswith(
        "\n".join([MEMORY_BLOCK_HEADING, *(f"- {m.key!r}: {m.value}" for m in second.memories)])
    )
    # The logged prompt hash is the hash of exactly what was sent.
    requested = [e for e in sim.log if e.type == "LLMRequested"][-1]
    assert requested.prompt_sha256 == sha256_of_prompt(cycle_2.messages, cycle_2.tools)
    assert fold_all(sim.log) == sim.state
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()


def test_a_retrieval_edited_in_the_log_is_caught_by_replay() -> None:
    sim = block_sim()
    sim.drive([*WRITES, REFLECT])
    at, retrieved = next(
        (i, e) for i, e in enumerate(sim.log) if isinstance(e, MemoriesRetrieved) and e.memories
    )
    edited = retrieved.memories[0].model_copy(update={"value": "The boat sank."})
    log = list(sim.log)
    log[at] = retrieved.model_copy(update={"memories": (edited, *retrieved.memories[1:])})
    report = replay_check(log)
    assert not report.ok  # the prompt it gives is not the one that was sent
    assert report.divergence is not None and "LLMRequested" in report.divergence.describe()


def test_a_retrieval_that_keeps_failing_leaves_the_cycle_without_its_block() -> None:
    sim = block_sim(cycles=1)
    sim.start()
    task = sim.task()
    assert isinstance(task, EmbedTask) and task.kind == "memories" and task.k == 2
    for send in (1, 2, 3):  # deadlines.retries is 2: three sends
        decision = sim.send(
            "TaskFailed", task.task_id, task_id=task.task_id, send=send, cause="expired", reason="x"
        )
        assert decision.accepted, decision.ignored
    (stated,) = retrievals(sim)
    assert stated.memories == () and "failed 3 time(s)" in (stated.error or "")
    assert [e.type for e in sim.log][-3:-1] == ["MemoriesRetrieved", "CycleStarted"]
    assert replay_check(sim.log).ok


def test_the_heuristic_names_relevant_memories_from_the_block() -> None:
    sim = block_sim(cycles=2, analysis="heuristic")
    ask = say("", ("send_message_to_operator", {"message": "Is the boat still at the harbour?"}))
    sim.drive([*WRITES, REFLECT, ask, REFLECT])
    analysed = [e for e in sim.log if e.type == "OperatorMessageAnalyzed"]
    assert len(analysed) == 1
    assert analysed[0].analysis.relevant_memories[0] == "boat"
    assert replay_check(sim.log).ok


def answer(relevant: list[str]) -> str:
    return json.dumps(
        {
            "intent": "question",
            "context_type": "new",
            "confidence": 0.8,
            "persistence_score": 0.3,
            "summary": "The operator asks about the boat.",
            "relevant_memories": relevant,
            "reasoning": "A question.",
        }
    )


@pytest.mark.parametrize(
    ("relevant", "analyser", "problem"),
    [(["boat"], "model", None), (["made-up"], "heuristic", "unknown_memory")],
)
def test_a_model_analysis_is_given_the_blocks_memories_and_held_to_them(
    relevant: list[str], analyser: str, problem: str | None
) -> None:
    sim = block_sim(cycles=2, analysis="model")
    ask = say("", ("send_message_to_operator", {"message": "Is the boat still at the harbour?"}))
    sim.drive([*WRITES, REFLECT, ask, REFLECT])
    (task_id,) = sim.analyses
    data = json.loads(sim.analyses[task_id].messages[-1].content)
    second = retrievals(sim)[1]
    assert [m["key"] for m in data["memories"]] == [m.key for m in second.memories]
    decision = sim.answer_analysis(task_id, answer(relevant))
    analysed = decision.events[0]
    assert analysed.analysis.analyser == analyser
    if problem is None:
        assert analysed.analysis.relevant_memories == ("boat",)
    else:
        assert f"({problem}:" in (analysed.fallback_reason or "")
        assert analysed.analysis.relevant_memories[0] == "boat"
    assert sim.state.status == "completed"
    assert replay_check(sim.log).ok


def test_without_the_block_an_analysis_task_carries_no_memories() -> None:
    sim = Sim(make_config(cycle_count=1, cognition={"analysis": "model"}))
    ask = say("", ("send_message_to_operator", {"message": "Is the boat still there?"}))
    sim.drive([ask, REFLECT])
    (task,) = sim.analyses.values()
    assert "memories" not in json.loads(task.messages[-1].content)
