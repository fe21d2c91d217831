"""The config composer: what it produces is what `contreact run` accepts."""

from __future__ import annotations

from pathlib import Path

import yaml

from contreact_cli.config_file import load_config
from contreact_ui.compose import COMPOSERS, SUBMITTED, compose


def test_defaults_make_a_valid_run_config(tmp_path: Path) -> None:
    composed = compose("run", {})
    assert composed.error is None and composed.yaml
    path = tmp_path / composed.filename
    path.write_text(composed.yaml)
    config = load_config(path)
    assert config.model_name == "llama3:latest" and config.cycle_count == 10
    assert config.diversity.enabled


def test_a_scripted_run_with_every_group(tmp_path: Path) -> None:
    values = {
        SUBMITTED: "1",
        "run_id": "composed-1",
        "model_name": "scripted-model",
        "cycle_count": "3",
        "backend": "scripted",
        "experiment": "exp-a",
        "model_options.seed": "7",
        "model_options.temperature": "0.2",
        "operator.mode": "auto",
        "operator.auto_reply": "Noted.",
        "diversity.enabled": "on",
        "diversity.mode": "advisory",
        "diversity.high_threshold": "0.85",
        "tools.search_memory": "on",
        "script": "- content: 'Cycle {cycle}: thinking.'\r\n",  # browsers send CRLF
    }
    composed = compose("run", values)
    assert composed.error is None, composed.error
    assert composed.filename == "composed-1.yaml"
    data = yaml.safe_load(composed.yaml or "")
    assert data["script"] == {"replies": [{"content": "Cycle {cycle}: thinking."}]}
    assert "enabled" not in data["diversity"]  # a ticked box is the default: not written
    path = tmp_path / composed.filename
    path.write_text(composed.yaml or "")
    config = load_config(path)
    assert config.model_options.seed == 7 and config.tools.search_memory
    assert config.operator.auto_reply == "Noted." and config.experiment == "exp-a"
    assert config.diversity.high_threshold == 0.85


def test_an_unticked_box_turns_the_default_off() -> None:
    composed = compose("run", {SUBMITTED: "1", "model_name": "m", "cycle_count": "2"})
    data = yaml.safe_load(composed.yaml or "")
    assert data["diversity"] == {"enabled": False}


def test_bad_input_is_one_line_naming_the_field() -> None:
    cases = {
        "cycle_count": ("ten", "Cycles (cycle_count): 'ten' is not a whole number"),
        "model_options.top_p": ("2", "model_options.top_p"),
        "run_id": ("../etc", "run_id must be"),
        "script": ("- [unclosed", "script is not valid YAML"),
    }
    for name, (value, expected) in cases.items():
        composed = compose("run", {SUBMITTED: "1", "model_name": "m", name: value})
        assert composed.yaml is None
        assert composed.error and expected in composed.error and "\n" not in composed.error
    scripted = compose(
        "run", {SUBMITTED: "1", "model_name": "m", "cycle_count": "2", "backend": "scripted"}
    )
    assert scripted.error and "needs a 'script'" in scripted.error


def test_the_form_is_structured_for_more_modes() -> None:
    assert set(COMPOSERS) == {"run"}
    composer = COMPOSERS["run"]
    assert composer.mode == "run" and composer.fields
    assert len({f.name for f in composer.fields}) == len(composer.fields)
