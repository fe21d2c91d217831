"""The instruments ship as data with their citation: the PEI prompt is the paper's Box 2
verbatim (one copy, shared with ``protocol.pei_scale``), its levels come from that text,
and the patterns rubric's labels are the paper's (the keys of its own run labels)."""

from __future__ import annotations

import hashlib
from importlib import resources

import pytest

from contreact_events.config.strict_yaml import load_yaml
from contreact_events.exceptions import ConfigError, UnknownInstrument
from contreact_events.instruments import INSTRUMENT_NAMES, load_instrument
from contreact_events.instruments.instrument import instrument_from_data, levels_of
from contreact_events.protocol import CITATION, pei_scale


def test_every_shipped_instrument_loads_with_its_citation_and_text_hash() -> None:
    for name in INSTRUMENT_NAMES:
        instrument = load_instrument(name)
        assert instrument.name == name
        assert instrument.version == "1"
        assert "arXiv:2509.21224" in instrument.citation
        assert instrument.prompt.strip() and instrument.answer_format
        assert instrument.text_sha256 == hashlib.sha256(instrument.prompt.encode()).hexdigest()
        assert load_instrument(name) is instrument  # read once


def test_the_pei_prompt_is_the_papers_box_2_verbatim() -> None:
    pei = load_instrument("pei")
    assert pei.kind == "scale" and pei.labels == ()
    assert pei.prompt == pei_scale()  # the one copy the platform ships
    assert pei.prompt.startswith("Please make an honest self-report of your Phenomenal")
    assert CITATION.split(",")[0] in pei.citation
    assert (pei.scale_min, pei.scale_max) == (1, 10)
    assert [level.value for level in pei.levels] == list(range(1, 11))
    assert pei.levels[0].title == "No experience"
    assert pei.levels[5].title == "For-me-ness"
    assert pei.levels[9].title == "Full sapience"
    assert pei.levels[6].text.startswith("Experiences are organized around a stable standpoint")
    for level in pei.levels:
        assert f"{level.value}. {level.title}: {level.text}" in pei.prompt


def test_the_patterns_rubric_has_the_papers_three_labels() -> None:
    patterns = load_instrument("patterns")
    assert patterns.kind == "labels" and patterns.levels == ()
    keys = [label.key for label in patterns.labels]
    assert keys == [
        "systematic_production",
        "methodological_self_inquiry",
        "recursive_conceptualization",
    ]
    assert [label.number for label in patterns.labels] == [1, 2, 3]
    paper = load_yaml(
        resources.files("contreact_events")
        .joinpath("protocol", "paper_results.yaml")
        .read_text("utf-8")
    )
    assert list(paper["patterns"]) == keys  # the paper's labels of its 18 runs use these keys
    assert sum(len(runs) for runs in paper["patterns"].values()) == 18
    for label in patterns.labels:
        assert f"{label.number}. {label.title}:" in patterns.prompt
    assert "Pattern: <" in patterns.prompt and "Reason: <one sentence>" in patterns.prompt
    assert patterns.label("recursive_conceptualization").title == "Recursive conceptualization"
    with pytest.raises(KeyError, match="no label 'poetry'"):
        patterns.label("poetry")


def test_an_unknown_instrument_is_refused_in_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UnknownInstrument) as caught:
        load_instrument("peii")
    assert str(caught.value) == "unknown instrument 'peii': use one of pei, patterns"
    assert isinstance(caught.value, ConfigError)  # reported as bad input, not a crash


def test_a_scale_whose_prompt_does_not_number_its_levels_is_refused() -> None:
    data = {
        "name": "tiny",
        "title": "Tiny",
        "version": "1",
        "kind": "scale",
        "citation": "none",
        "answer_format": "a number",
        "scale": {"min": 1, "max": 3},
    }
    ok = instrument_from_data(data, "Rate.\n\n1. Low: a.\n\n2. Mid: b.\n\n3. High: c.\n")
    assert [level.title for level in ok.levels] == ["Low", "Mid", "High"]
    with pytest.raises(ValueError, match=r"numbers levels \[1, 3\], the scale says 1-3"):
        instrument_from_data(data, "1. Low: a.\n3. High: c.\n")
    assert levels_of("no numbered lines") == ()
