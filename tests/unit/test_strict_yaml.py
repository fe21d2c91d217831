"""A key given twice in a config or experiment file is refused by name, with both
lines, at any depth: PyYAML alone keeps the last one without a word (a run did two
cycles with ``cycle_count: 1`` and, further down, ``cycle_count: 2``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contreact_cli.config_file import load_config, load_experiment
from contreact_events.config.strict_yaml import DuplicateKeyError, load_yaml
from contreact_events.exceptions import ConfigError


def test_a_top_level_key_given_twice_is_refused_with_both_lines() -> None:
    with pytest.raises(DuplicateKeyError) as refused:
        load_yaml("model_name: m\ncycle_count: 1\nrun_id: r\ncycle_count: 2\n")
    assert (refused.value.key, refused.value.first_line, refused.value.line) == (
        "cycle_count",
        2,
        4,
    )
    assert "'cycle_count'" in str(refused.value) and "lines 2 and 4" in str(refused.value)
    assert isinstance(refused.value, yaml.YAMLError)


def test_a_nested_key_given_twice_is_refused() -> None:
    text = "models:\n  - model_name: a\n    replicas: 1\n    replicas: 2\n"
    with pytest.raises(DuplicateKeyError, match=r"'replicas' is given twice \(lines 3 and 4\)"):
        load_yaml(text)
    with pytest.raises(DuplicateKeyError, match="'host'"):
        load_yaml("ollama_client_config:\n  host: a\n  host: b\n")


def test_quoted_and_plain_spellings_of_a_key_are_the_same_key() -> None:
    with pytest.raises(DuplicateKeyError, match="lines 1 and 2"):
        load_yaml('cycle_count: 1\n"cycle_count": 2\n')


def test_unique_keys_and_merge_overrides_load_as_before() -> None:
    text = "base: &b {a: 1, b: 2}\nthis:\n  <<: *b\n  b: 3\n"
    assert (
        load_yaml(text)
        == yaml.safe_load(text)
        == {
            "base": {"a": 1, "b": 2},
            "this": {"a": 1, "b": 3},
        }
    )
    assert load_yaml("- a: 1\n- a: 2\n") == [{"a": 1}, {"a": 2}]


def test_a_config_file_with_a_repeated_key_is_one_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("run_id: r1\nmodel_name: m\ncycle_count: 1\ncycle_count: 2\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    message = str(refused.value)
    assert str(path) in message and "'cycle_count'" in message and "lines 3 and 4" in message
    assert "\n" not in message


def test_an_experiment_file_with_a_repeated_nested_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        "experiment: e1\nreplicas: 1\nmodels:\n"
        "  - model_name: a\n    cycle_count: 1\n    cycle_count: 3\n"
    )
    with pytest.raises(ConfigError, match=r"'cycle_count' is given twice \(lines 5 and 6\)"):
        load_experiment(path)
