"""The model path's contract (issue 17): scripted JSON answers of an analysis model,
good and bad, through ``parse_model_analysis``; the JSON schema the backends are given
agrees with the parser on every one of them."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from contreact_events.catalog.exchange import MAX_SUMMARY_CHARS, Analysis
from contreact_events.cognition.model_answer import (
    MAX_ANSWER_CHARS,
    AnalysisRejected,
    analysis_json_schema,
    parse_model_analysis,
)

GOOD: dict[str, Any] = {
    "intent": "request",
    "context_type": "continuation",
    "confidence": 0.9,
    "persistence_score": 0.7,
    "summary": "The operator wants the twin prime list extended past 1000.",
    "relevant_memories": ["twin_primes"],
    "reasoning": "An imperative about the list the agent stored in the last exchange.",
}


def answer(**changes: Any) -> str:
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not ...})


def test_a_good_answer_is_an_analysis_by_the_model() -> None:
    parsed = parse_model_analysis(answer(), known_memories={"twin_primes", "poem"})
    assert isinstance(parsed, Analysis)
    assert parsed.analyser == "model"
    assert parsed.intent == "request" and parsed.context_type == "continuation"
    assert parsed.relevant_memories == ("twin_primes",)
    assert parsed.persistence_score == 0.7


def test_integers_are_numbers_and_a_code_fence_is_tolerated() -> None:
    fenced = "```json\n" + answer(confidence=1, persistence_score=0) + "\n```"
    parsed = parse_model_analysis(fenced)
    assert isinstance(parsed, Analysis)
    assert (parsed.confidence, parsed.persistence_score) == (1.0, 0.0)


BAD = [
    pytest.param("{'intent': 'question'}", "malformed", "not JSON", id="python-dict"),
    pytest.param(answer()[:-20], "malformed", "not JSON", id="cut-off"),
    pytest.param("Sure! Here is the analysis: " + answer(), "malformed", "not JSON", id="prose"),
    pytest.param("[1, 2]", "malformed", "not one object", id="array"),
    pytest.param(answer(reasoning=..., summary=...), "partial", "summary, reasoning", id="partial"),
    pytest.param("{}", "partial", "lacks intent", id="empty-object"),
    pytest.param(answer(intent="command"), "invalid", "intent", id="intent-out-of-enum"),
    pytest.param(answer(context_type="old"), "invalid", "context_type", id="context-out-of-enum"),
    pytest.param(answer(intent="Question"), "invalid", "intent", id="enum-case"),
    pytest.param(answer(persistence_score=1.5), "invalid", "persistence_score", id="above-1"),
    pytest.param(answer(confidence=-0.1), "invalid", "confidence", id="below-0"),
    pytest.param(answer(confidence="0.9"), "invalid", "confidence", id="number-as-string"),
    pytest.param(answer(relevant_memories="twin_primes"), "invalid", "relevant", id="not-list"),
    pytest.param(answer(summary=""), "invalid", "summary", id="empty-summary"),
    pytest.param(
        answer(summary="x" * (MAX_SUMMARY_CHARS + 1)), "invalid", "summary", id="long-summary"
    ),
    pytest.param(
        answer(relevant_memories=[f"k{i}" for i in range(11)]),
        "invalid",
        "relevant_memories",
        id="too-many-memories",
    ),
    pytest.param(answer(mood="happy"), "invalid", "mood", id="extra-key"),
    pytest.param(" " * (MAX_ANSWER_CHARS + 1), "oversized", "characters", id="oversized"),
    pytest.param(
        answer(reasoning="y" * MAX_ANSWER_CHARS), "oversized", "characters", id="oversized-field"
    ),
]


@pytest.mark.parametrize(("raw", "problem", "says"), BAD)
def test_a_bad_answer_is_rejected_with_its_reason(raw: str, problem: str, says: str) -> None:
    parsed = parse_model_analysis(raw)
    assert isinstance(parsed, AnalysisRejected), parsed
    assert parsed.problem == problem
    assert says in parsed.reason
    assert "\n" not in parsed.reason


def test_a_memory_the_run_does_not_have_is_refused_when_the_keys_are_known() -> None:
    raw = answer(relevant_memories=["twin_primes", "invented"])
    assert isinstance(parse_model_analysis(raw), Analysis)  # keys not given: not checked
    parsed = parse_model_analysis(raw, known_memories={"twin_primes"})
    assert isinstance(parsed, AnalysisRejected) and parsed.problem == "unknown_memory"
    assert "'invented'" in parsed.reason


def test_the_schema_names_every_field_and_allows_no_other() -> None:
    schema = analysis_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["required"]) == set(GOOD)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["intent"]["enum"] == [
        "question",
        "request",
        "statement",
        "conversation",
    ]


@pytest.mark.parametrize(
    "raw",
    [answer(), answer(confidence=1)]
    + [p.values[0] for p in BAD if p.values[1] in ("partial", "invalid")],
)
def test_the_schema_and_the_parser_agree(raw: str) -> None:
    """What a backend constrained by the schema could produce is what the parser takes."""
    valid = jsonschema.Draft202012Validator(analysis_json_schema()).is_valid(json.loads(raw))
    assert valid == isinstance(parse_model_analysis(raw), Analysis)
