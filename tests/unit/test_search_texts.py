"""What a search looks at in a run's log (``diversity/search_texts.py``), shared by
``contreact search`` and the dashboard: each text with its cycle and event, keyword
matching that takes the query literally, and the semantic ranking."""

from __future__ import annotations

from contreact_events.diversity.search_texts import (
    SearchText,
    SearchTexts,
    keyword_match,
    semantic_ranking,
)
from tests.support import hostile
from tests.support.experiment_runs import NEEDLE, run_log


def texts_of(run_id: str = "r1", cycles: int = 3) -> list[SearchText]:
    return SearchTexts(run_id).feed_all(run_log(run_id, "m", cycles, experiment=None))


def test_every_kind_of_text_is_found_with_its_cycle_and_event() -> None:
    log = run_log("r1", "m", 3, experiment=None)
    texts = SearchTexts("r1").feed_all(log)
    kinds = {(t.kind, t.cycle) for t in texts}
    for cycle in (1, 2, 3):
        for kind in ("reflection", "memory", "operator", "reply", "tool"):
            assert (kind, cycle) in kinds, (kind, cycle)
    memory = [t for t in texts if t.kind == "memory" and t.cycle == 2]
    assert memory[0].label == "note-2" and memory[0].text.startswith("tides of cycle 2")
    tools = {t.label for t in texts if t.kind == "tool"}
    assert {"write", "list", "send_message_to_operator", hostile.TOOL} <= tools
    operator = next(t for t in texts if t.kind == "operator")
    assert operator.text == hostile.OPERATOR
    for text in texts:  # seq is the position of the event that holds the text
        event = log[text.seq - 1]
        assert event.run_id == "r1"
        if text.kind == "reflection":
            assert event.type == "ReflectionRecorded" and event.text == text.text
        if text.kind == "operator":
            assert event.type == "OperatorMessageSent"
        if text.kind in ("tool", "memory"):
            assert event.type == "ToolCallCompleted"


def test_a_reflection_comes_again_with_its_logged_vector() -> None:
    log = run_log("r1", "m", 2, experiment=None)
    reader = SearchTexts("r1")
    seen = [t for event in log for t in reader.feed(event) if t.kind == "reflection"]
    assert [t.vector is None for t in seen] == [True, False, True, False]
    assert seen[0].seq == seen[1].seq and seen[0].text == seen[1].text
    last = {t.seq: t for t in SearchTexts("r1").feed_all(log) if t.kind == "reflection"}
    assert all(t.vector is not None for t in last.values())


def test_keyword_matching_is_literal_and_case_folded() -> None:
    text = "Cycle 2: a.*b (c1) [x] ZEBRACORN Straße"
    assert keyword_match(text, "zebracorn") is not None
    found = keyword_match(text, "STRASSE")
    assert found is not None and found.match == "Straße"
    assert keyword_match(text, ".*") is not None  # the characters, not a pattern
    assert keyword_match("abc", ".*") is None
    assert keyword_match("abc", "a|z") is None
    assert keyword_match("a(b", "(") is not None
    assert keyword_match("anything", "") is None
    found = keyword_match("x" * 200 + "needle" + "y" * 200, "NEEDLE", context=10)
    assert found is not None
    assert (found.before, found.match, found.after) == ("…" + "x" * 10, "needle", "y" * 10 + "…")


def test_the_needle_is_in_cycle_two_only() -> None:
    hits = [t for t in texts_of() if keyword_match(t.text, NEEDLE)]
    assert [(t.kind, t.cycle) for t in hits] == [("reflection", 2)]


def test_semantic_ranking_orders_by_cosine() -> None:
    texts = [SearchText("r", i, 1, "memory", "k", f"t{i}") for i in range(3)]
    vectors = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
    ranked = semantic_ranking([0.0, 1.0], texts, vectors, 2)
    assert [(t.text, round(s, 3)) for t, s in ranked] == [("t2", 1.0), ("t1", 0.8)]
    assert semantic_ranking([1.0, 0.0], [], [], 3) == []


def test_the_types_said_to_hold_texts_are_the_ones_feed_reads() -> None:
    """``TEXT_EVENT_TYPES`` (what callers may skip on) names exactly the event types
    ``SearchTexts.feed`` has a case for: a case added without the name would be skipped
    by the dashboard's projector, and its texts never found."""
    import ast
    import inspect
    import textwrap

    from contreact_events.diversity.search_texts import TEXT_EVENT_TYPES, SearchTexts

    tree = ast.parse(textwrap.dedent(inspect.getsource(SearchTexts.feed)))
    cased: set[str] = set()
    for case in (n for n in ast.walk(tree) if isinstance(n, ast.match_case)):
        if isinstance(case.pattern, ast.MatchClass) and isinstance(case.pattern.cls, ast.Name):
            cased.add(case.pattern.cls.id)
        guard = case.guard
        if isinstance(guard, ast.Compare) and isinstance(guard.comparators[0], ast.Constant):
            cased.add(str(guard.comparators[0].value))
    assert cased == TEXT_EVENT_TYPES
