"""Seed 001's paragraph repetition guard in the cycle (regenerate mode), with the
pure check and toy vectors (the real model is used end to end)."""

from __future__ import annotations

from contreact_events.core.decide import Decision
from contreact_events.diversity.corpus import accepted_chunks
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import EmbedTask
from tests.support.sim import Sim, make_config, say

PARA_A = "The tides follow the moon, and I spent this cycle charting how they rise and fall."
PARA_B = "Prime gaps grow irregularly, and I wondered what a record gap would look like now."
PARA_C = "Glaciers carve valleys slowly; I sketched how ice and time shape a landscape."


def regen_sim(**diversity: object) -> Sim:
    return Sim(
        make_config(cycle_count=3, diversity={"enabled": True, "mode": "regenerate", **diversity})
    )


def types(decision: Decision) -> list[str]:
    return [e.type for e in decision.events]


def test_a_new_answer_is_checked_and_joins_the_corpus() -> None:
    sim = regen_sim()
    sim.start()
    decision = sim.answer_llm(say(PARA_A))
    assert types(decision) == ["LLMResponded", "ParagraphCheckRequested"]
    (task,) = decision.tasks
    assert isinstance(task, EmbedTask) and task.kind == "paragraphs"
    assert (task.scope, task.attempt, task.threshold) == ("run:run-1", 1, 0.85)
    decision = sim.answer_paragraphs()
    assert types(decision)[:4] == [
        "ParagraphsChecked",
        "ReflectionRecorded",
        "ParagraphsAccepted",
        "EmbeddingRequested",
    ]
    assert [c.text for c in accepted_chunks(sim.log)] == [PARA_A]


def test_a_repeating_answer_is_asked_again_with_the_feedback() -> None:
    sim = regen_sim()
    sim.start()
    sim.answer_llm(say(PARA_A))
    sim.answer_paragraphs()
    sim.answer_embedding()
    decision = sim.answer_llm(say(PARA_A))  # cycle 2 repeats cycle 1
    decision = sim.answer_paragraphs()
    assert types(decision) == ["ParagraphsChecked", "RegenerationRequested", "LLMRequested"]
    checked, regen = decision.events[0], decision.events[1]
    assert not checked.is_unique and checked.overall_similarity > 0.99
    assert "CRITICAL - Near-duplicate paragraphs" in checked.feedback
    assert regen.attempt == 2
    assert regen.feedback.startswith("IMPORTANT: Your previous response was too similar")
    (task,) = decision.tasks
    assert task.messages[-1].role == "user" and task.messages[-1].content == regen.feedback
    assert task.messages[-2].role == "user"  # the rejected answer left the prompt
    decision = sim.answer_llm(say(PARA_B))
    decision = sim.answer_paragraphs()
    assert types(decision)[:3] == ["ParagraphsChecked", "ReflectionRecorded", "ParagraphsAccepted"]
    assert sim.state.reflection_history[-1] == PARA_B
    assert sim.state.metrics.regenerations == 1
    assert sim.state.regeneration_feedback is None


def test_the_attempts_stop_at_the_limit_and_the_topic_is_exhausted() -> None:
    sim = regen_sim(max_attempts=3)
    sim.start()
    sim.answer_llm(say(PARA_A))
    sim.answer_paragraphs()
    sim.answer_embedding()
    for _ in range(2):
        sim.answer_llm(say(PARA_A))
        decision = sim.answer_paragraphs()
        assert types(decision)[1] == "RegenerationRequested"
    sim.answer_llm(say(PARA_A))
    decision = sim.answer_paragraphs()
    assert types(decision)[:4] == [
        "ParagraphsChecked",
        "TopicExhausted",
        "ReflectionRecorded",
        "ParagraphsAccepted",
    ]
    exhausted, accepted = decision.events[1], decision.events[3]
    assert exhausted.attempts == 3 and exhausted.best_attempt == 1
    assert accepted.relaxed is True
    sim.answer_embedding()
    assert sim.state.cycle_number == 3 and sim.state.phase == "awaiting_llm"


def test_under_the_relaxed_threshold_the_best_attempt_is_accepted() -> None:
    sim = regen_sim(max_attempts=2, paragraph_threshold=0.5, relaxed_threshold=0.999)
    sim.start()
    sim.answer_llm(say(PARA_A))
    sim.answer_paragraphs()
    sim.answer_embedding()
    sim.answer_llm(say(PARA_A))  # identical: ~1.0, over the relaxed threshold
    sim.answer_paragraphs()
    sim.answer_llm(say(PARA_A + " " + PARA_C))  # similar enough to fail 0.5, under 0.999
    decision = sim.answer_paragraphs()
    kinds = types(decision)
    assert "TopicExhausted" not in kinds
    accepted = decision.events[kinds.index("ParagraphsAccepted")]
    assert accepted.relaxed and accepted.attempt == 2
    assert sim.state.reflection_history[-1] == PARA_A + " " + PARA_C
    last_assistant = [m for m in sim.state.message_history if m.role == "assistant"][-1]
    assert last_assistant.content == PARA_A + " " + PARA_C


def test_short_answers_have_no_paragraphs_to_check() -> None:
    sim = regen_sim()
    sim.start()
    decision = sim.answer_llm(say("Too short to check."))
    assert types(decision)[:3] == ["LLMResponded", "ReflectionRecorded", "EmbeddingRequested"]


def test_a_failed_check_accepts_the_answer_unchecked() -> None:
    sim = regen_sim()
    sim.start()
    sim.answer_llm(say(PARA_A))
    task = sim.task()
    decision = sim.send(
        "EmbeddingFailed", task.task_id, task_id=task.task_id, cycle=1, error="the embedder is down"
    )
    assert types(decision)[:3] == ["EmbeddingFailed", "ReflectionRecorded", "EmbeddingRequested"]
    assert accepted_chunks(sim.log) == []


def test_a_regenerate_run_replays_without_divergence() -> None:
    sim = regen_sim()
    state = sim.drive([say(PARA_A), say(PARA_A), say(PARA_B), say(PARA_C)])
    assert state.status == "completed"
    assert replay_check(sim.log).ok
