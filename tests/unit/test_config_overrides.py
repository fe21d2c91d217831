"""``key=value`` settings (fork --set, replay --what-if, the composer): one syntax."""

from __future__ import annotations

import pytest

from contreact_events.config import RunConfig, parse_run_config
from contreact_events.config.overrides import (
    Assignment,
    apply_assignments,
    changed_settings,
    parse_assignments,
    setting_paths,
)
from contreact_events.exceptions import ConfigError


@pytest.fixture
def config() -> RunConfig:
    return parse_run_config({"run_id": "r1", "model_name": "m", "cycle_count": 3})


def test_values_take_the_type_a_config_file_gives_them(config: RunConfig) -> None:
    assignments = parse_assignments(
        [
            "diversity.moderate_threshold=0.6",
            "operator.mode=human",
            "max_steps_per_cycle=5",
            "final_call_at_step_cap=false",
            "diversity.natural_repetition_patterns=[note, 'log:']",
        ]
    )
    changed = apply_assignments(config, assignments)
    assert changed.diversity.moderate_threshold == 0.6
    assert changed.operator.mode == "human"
    assert changed.max_steps_per_cycle == 5
    assert changed.final_call_at_step_cap is False
    assert changed.diversity.natural_repetition_patterns == ("note", "log:")
    assert changed_settings(config, changed) == {
        "diversity.moderate_threshold": (0.7, 0.6),
        "operator.mode": ("auto", "human"),
        "max_steps_per_cycle": (25, 5),
        "final_call_at_step_cap": (True, False),
        "diversity.natural_repetition_patterns": ([], ["note", "log:"]),
    }
    assert config.max_steps_per_cycle == 25, "the original config is never changed"


def test_a_whole_section_and_null_can_be_set(config: RunConfig) -> None:
    changed = apply_assignments(
        config,
        parse_assignments(["limits={memory_value_chars: 10}", "limits.llm_content_chars=null"]),
    )
    assert changed.limits.memory_value_chars == 10
    assert changed.limits.llm_content_chars is None


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["nokey"], "expected key=value"),
        (["=1"], "expected key=value"),
        (["diversity.moderate=0.6"], "did you mean diversity.mode, diversity.moderate_threshold"),
        (["cycle_count=[1"], "not valid YAML"),
        (["cycle_count=2", "cycle_count=3"], "given twice"),
    ],
)
def test_bad_pairs_are_refused_by_name(pairs: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_assignments(pairs, option="--what-if")


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ('max_steps_per_cycle="5"', "valid integer"),
        ("diversity.moderate_threshold=0.9", "must not exceed diversity.high_threshold"),
        ("operator.mode=robot", "operator.mode"),
    ],
)
def test_values_are_validated_with_the_whole_config(
    config: RunConfig, pair: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        apply_assignments(config, parse_assignments([pair]))


def test_every_leaf_of_the_config_is_a_setting() -> None:
    paths = setting_paths()
    for path in (
        "cycle_count",
        "diversity",
        "diversity.high_threshold",
        "limits.tool_output_chars",
        "deadlines.llm_s",
        "ollama_client_config.host",
        "script",
    ):
        assert path in paths
    assert str(Assignment("operator.mode", "human")) == "operator.mode=human"
