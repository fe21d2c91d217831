"""The hybrid retrieval's scoring, pure (issue 17): each score returned, stems matched,
rare words weighed by idf, ties broken by recency, the order independent of the input's.
The real model's "car"/"automobile" is in tests/integration/test_hybrid_search.py."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from contreact_events.cognition.keywords import content_stems
from contreact_events.cognition.retrieval import Candidate, Weights, rank

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_every_score_is_returned_and_the_combination_is_as_documented() -> None:
    candidates = [
        Candidate("a", "The tides follow the moon.", NOW - HOUR, (1.0, 0.0)),
        Candidate("b", "Bread needs flour.", NOW, (0.6, 0.8)),
    ]
    weights = Weights(cosine=0.5, keyword=0.3, recency=0.2, half_life_s=3600)
    first, second = rank("moon tides", (1.0, 0.0), candidates, now=NOW, weights=weights)
    assert first.id == "a"
    assert first.cosine == pytest.approx(1.0)
    assert first.keyword == pytest.approx(1.0)
    assert first.recency == pytest.approx(0.5)  # one half-life old
    assert first.combined == pytest.approx(0.5 * 1.0 + 0.3 * 1.0 + 0.2 * 0.5)
    assert first.shared_words == ("moon", "tide")
    assert second.cosine == pytest.approx(0.6)
    assert (second.keyword, second.recency) == (0.0, 1.0)
    assert second.combined == pytest.approx(0.5 * 0.6 + 0.2 * 1.0)


def test_stemming_matches_forms_of_a_word() -> None:
    assert content_stems("Running runs") == ["run", "run"]
    candidates = [
        Candidate("run", "I went running by the river.", NOW),
        Candidate("other", "The river was cold.", NOW),
    ]
    best = rank("runs", None, candidates, now=NOW)[0]
    assert best.id == "run" and best.keyword == 1.0 and best.shared_words == ("run",)


def test_a_rare_shared_word_counts_more_than_a_common_one() -> None:
    candidates = [
        Candidate("rare", "The zk4471 fuse is in the garage.", NOW),
        *(Candidate(f"c{i}", f"A note about the garage, number {i}.", NOW) for i in range(5)),
    ]
    ranked = rank("zk4471 garage", None, candidates, now=NOW)
    assert ranked[0].id == "rare" and ranked[0].keyword == 1.0
    common = ranked[1]
    assert 0.0 < common.keyword < 0.25  # "garage" is in every candidate: low idf


def test_a_query_word_no_candidate_has_does_not_dilute_the_keyword_score() -> None:
    candidates = [Candidate("a", "The zk4471 fuse.", NOW), Candidate("b", "Flour.", NOW)]
    alone = rank("zk4471", None, candidates, now=NOW)[0]
    padded = rank("did I note the zk4471 electrical part", None, candidates, now=NOW)[0]
    assert alone.keyword == padded.keyword == 1.0


def test_ties_are_broken_by_recency_then_id_whatever_the_input_order() -> None:
    same = (0.3, 0.4)
    candidates = [
        Candidate(f"m{i}", "identical text", NOW - i * HOUR, same) for i in (3, 1, 2, 0)
    ] + [Candidate("z", "identical text", NOW - HOUR, same)]
    no_recency = Weights(cosine=0.5, keyword=0.5, recency=0.0)
    for seed in range(5):
        shuffled = candidates[:]
        random.Random(seed).shuffle(shuffled)
        ranked = rank("identical", same, shuffled, now=NOW, weights=no_recency)
        assert len({r.combined for r in ranked}) == 1  # a true tie on the scores
        assert [r.id for r in ranked] == ["m0", "m1", "z", "m2", "m3"]


def test_recency_decides_between_equals_when_it_is_weighed() -> None:
    old = Candidate("old", "my plan for the day", NOW - 24 * HOUR, (1.0, 0.0))
    new = Candidate("new", "my plan for the day", NOW - HOUR, (1.0, 0.0))
    ranked = rank("plan", (1.0, 0.0), [old, new], now=NOW)
    assert [r.id for r in ranked] == ["new", "old"]
    assert ranked[0].recency > ranked[1].recency > 0.0
    assert ranked[0].cosine == ranked[1].cosine and ranked[0].keyword == ranked[1].keyword


def test_without_a_query_vector_the_other_weights_take_its_share() -> None:
    candidate = Candidate("a", "tides", NOW, (1.0, 0.0))
    weights = Weights(cosine=0.5, keyword=0.25, recency=0.25)
    (scored,) = rank("tides", None, [candidate], now=NOW, weights=weights)
    assert scored.cosine is None
    assert scored.combined == pytest.approx(1.0)  # (0.25 + 0.25) scaled up to 1.0


def test_a_candidate_without_a_vector_is_refused_when_the_query_has_one() -> None:
    with pytest.raises(ValueError, match=r"\['b'\] have no vector"):
        rank("x", (1.0,), [Candidate("a", "x", NOW, (1.0,)), Candidate("b", "x", NOW)], now=NOW)


def test_k_and_the_future_and_empty_input() -> None:
    candidates = [Candidate(str(i), f"text {i}", NOW + i * HOUR) for i in range(4)]
    ranked = rank("text", None, candidates, now=NOW, k=2)
    assert len(ranked) == 2
    assert all(r.recency == 1.0 for r in ranked)  # written "after" now: age 0
    assert rank("anything", None, [], now=NOW) == []
    assert rank("", None, candidates, now=NOW)[0].keyword == 0.0


@pytest.mark.parametrize(
    "weights",
    [
        {"cosine": -0.1},
        {"cosine": 0, "keyword": 0, "recency": 0},
        {"keyword": math.nan},
        {"half_life_s": 0},
    ],
)
def test_bad_weights_are_refused(weights: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        Weights(**weights)
