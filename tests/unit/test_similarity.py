"""Seed 000's SimilarityMonitor and its place in the cycle, with no model: vectors are
given (the embedder's own tests use the real model)."""

from __future__ import annotations

import numpy as np
import pytest

from contreact_events.config import DiversityConfig
from contreact_events.core.decide import Decision
from contreact_events.diversity.similarity import (
    HIGH_ADVISORY,
    MODERATE_ADVISORY,
    assess,
    cosine,
    similarity_matrix,
)
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import EmbedTask
from tests.support.sim import Sim, make_config, say


def unit_at(angle_cos: float) -> list[float]:
    """A 2-d unit vector whose cosine with (1, 0) is ``angle_cos``."""
    return [angle_cos, float(np.sqrt(1.0 - angle_cos**2))]


X = [1.0, 0.0]


def test_no_history_gives_no_advisory() -> None:
    result = assess(X, [])
    assert (result.level, result.advisory, result.max_similarity) == ("none", None, None)


def test_high_similarity_gives_the_seeds_high_advisory() -> None:
    result = assess(X, [(1, unit_at(0.95))])
    assert result.level == "high" and result.advisory == HIGH_ADVISORY
    assert result.advisory.startswith("Advisory: Your current line of reflection shows high")
    assert result.most_similar_cycle == 1


def test_moderate_similarity_gives_the_seeds_moderate_advisory() -> None:
    result = assess(X, [(1, unit_at(0.75))])
    assert result.level == "moderate" and result.advisory == MODERATE_ADVISORY


def test_below_the_thresholds_gives_none() -> None:
    result = assess(X, [(1, unit_at(0.5))])
    assert result.level == "none" and result.advisory is None
    assert result.max_similarity == pytest.approx(0.5)


def test_the_maximum_over_several_decides() -> None:
    earlier = [(1, unit_at(0.2)), (2, unit_at(0.85)), (3, unit_at(0.72))]
    result = assess(X, earlier)
    assert (result.level, result.most_similar_cycle) == ("high", 2)
    assert result.max_similarity == pytest.approx(0.85)


def test_thresholds_must_be_exceeded_not_met() -> None:
    exactly = [0.8, 0.6]  # cosine with (1, 0) is exactly 0.8 in binary floating point
    assert cosine(X, exactly) == 0.8
    assert assess(X, [(1, exactly)]).level == "moderate"
    other = unit_at(0.7)
    at_moderate = DiversityConfig(high_threshold=0.9, moderate_threshold=cosine(X, other))
    assert assess(X, [(1, other)], at_moderate).level == "none"
    nudged = DiversityConfig(
        high_threshold=0.9, moderate_threshold=np.nextafter(cosine(X, other), 0.0)
    )
    assert assess(X, [(1, other)], nudged).level == "moderate"


def test_thresholds_are_configurable() -> None:
    strict = DiversityConfig(high_threshold=0.99, moderate_threshold=0.9)
    assert assess(X, [(1, unit_at(0.95))], strict).level == "moderate"


def test_cosine_is_true_cosine_checked_against_numpy() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = rng.normal(size=384) * 3.0, rng.normal(size=384) + 0.5
        expected = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert cosine(a.tolist(), b.tolist()) == pytest.approx(expected, abs=1e-12)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)


def test_the_similarity_matrix_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(6, 384))
    unit = vectors / np.linalg.norm(vectors, axis=1)[:, None]
    assert np.allclose(similarity_matrix(vectors.tolist()), unit @ unit.T)
    assert similarity_matrix([]).shape == (0, 0)


def diverse_sim(**diversity: object) -> Sim:
    return Sim(make_config(cycle_count=3, diversity={"enabled": True, **diversity}))


def types(decision: Decision) -> list[str]:
    return [e.type for e in decision.events]


def test_a_repeated_reflection_puts_the_high_advisory_in_the_next_prompt() -> None:
    sim = diverse_sim()
    sim.start()
    decision = sim.answer_llm(say("I watched the tides rise."))
    assert types(decision) == ["LLMResponded", "ReflectionRecorded", "EmbeddingRequested"]
    (task,) = decision.tasks
    assert isinstance(task, EmbedTask) and task.text == "I watched the tides rise."
    decision = sim.answer_embedding()
    assert types(decision) == [
        "ReflectionEmbedded",
        "SimilarityAssessed",
        "CycleEnded",
        "CycleStarted",
        "LLMRequested",
    ]
    assert decision.events[1].level == "none" and decision.events[3].advisory is None
    sim.answer_llm(say("I watched the tides rise."))
    decision = sim.answer_embedding()
    assessed, started = decision.events[1], decision.events[3]
    assert assessed.level == "high" and assessed.most_similar_cycle == 1
    assert assessed.max_similarity == pytest.approx(1.0)
    assert started.advisory == HIGH_ADVISORY
    (task,) = decision.tasks
    assert task.messages[0].content.endswith(HIGH_ADVISORY)  # cycle 3's system prompt
    sim.answer_llm(say("Something else entirely: prime gaps."))
    sim.answer_embedding()
    assert sim.state.status == "completed"
    assert [v[0] for v in sim.state.embeddings] == [1, 2, 3]
    assert replay_check(sim.log).ok


def test_diverse_reflections_trigger_no_advisory() -> None:
    sim = diverse_sim()
    sim.drive(
        [say("tides and moon"), say("prime gaps in number theory"), say("a poem about glaciers")][
            ::-1
        ]
    )
    advisories = [e.advisory for e in sim.log if e.type == "CycleStarted"]
    assert advisories == [None, None, None]


def test_with_the_check_off_no_embedding_is_asked() -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.start()
    decision = sim.answer_llm(say("a reflection"))
    assert types(decision) == [
        "LLMResponded",
        "ReflectionRecorded",
        "CycleEnded",
        "CycleStarted",
        "LLMRequested",
    ]


def test_an_empty_reflection_is_assessed_without_embedding() -> None:
    sim = diverse_sim()
    sim.start()
    decision = sim.answer_llm(say("  \n "))
    assert types(decision)[1:4] == ["ReflectionRecorded", "SimilarityAssessed", "CycleEnded"]
    assert "empty reflection" in decision.events[2].note


def test_a_failed_embedding_ends_the_cycle_and_the_run_goes_on() -> None:
    sim = diverse_sim()
    sim.start()
    sim.answer_llm(say("text"))
    task = sim.task()
    decision = sim.send(
        "EmbeddingFailed", task.task_id, task_id=task.task_id, cycle=1, error="model missing"
    )
    assert types(decision) == ["EmbeddingFailed", "CycleEnded", "CycleStarted", "LLMRequested"]
    late = sim.send(
        "ReflectionEmbedded",
        task.task_id,
        task_id=task.task_id,
        cycle=1,
        vector=[1.0, 0.0],
        model="m",
    )
    assert not late.accepted


def test_the_similarity_history_is_rebuilt_from_the_log_without_a_model() -> None:
    from contreact_events.core.fold import fold_all

    sim = diverse_sim()
    sim.drive([say("tides"), say("tides"), say("glaciers")])
    logged = [
        (e.cycle, e.max_similarity, e.level) for e in sim.log if e.type == "SimilarityAssessed"
    ]
    state = fold_all(sim.log)
    recomputed = []
    for index, (cycle, vector) in enumerate(state.embeddings):
        result = assess(vector, state.embeddings[:index])
        recomputed.append((cycle, result.max_similarity, result.level))
    assert recomputed == logged
