"""The config composer: what it produces is what `contreact run` accepts."""

from __future__ import annotations

from pathlib import Path

import yaml

from contreact_cli.config_file import load_config, load_experiment
from contreact_ui.composer.form import COMPOSERS, SUBMITTED, compose


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


def test_each_mode_has_distinct_fields_and_its_command() -> None:
    assert set(COMPOSERS) == {"run", "experiment"}
    for mode, composer in COMPOSERS.items():
        assert composer.mode == mode and composer.fields
        assert len({f.name for f in composer.fields}) == len(composer.fields)
    assert COMPOSERS["experiment"].command == "contreact experiment run"


def test_the_default_experiment_is_valid_and_loads_as_the_cli_loads_it(tmp_path: Path) -> None:
    composed = compose("experiment", {})
    assert composed.error is None and composed.yaml
    assert "# Run it with: contreact experiment run my-experiment.yaml" in composed.yaml
    path = tmp_path / composed.filename
    path.write_text(composed.yaml)
    experiment, planned = load_experiment(path)
    assert experiment.experiment == "my-experiment" and experiment.replicas == 3
    assert [run.config.run_id for run in planned][:3] == [
        "my-experiment-llama3.2-3b-A",
        "my-experiment-llama3.2-3b-B",
        "my-experiment-llama3.2-3b-C",
    ]
    assert {run.config.model_name for run in planned} == {"llama3.2:3b", "qwen2.5:7b"}
    assert all(run.config.backend == "ollama" for run in planned)


def test_an_experiment_with_per_model_overrides(tmp_path: Path) -> None:
    values = {
        SUBMITTED: "1",
        "experiment": "trio",
        "replicas": "2",
        "replica_seeds": "offset",
        "cycle_count": "4",
        "backend": "openai",
        "openai_client_config.base_url": "http://127.0.0.1:8000/v1",
        "openai_client_config.api_key_env": "VLLM_KEY",
        "model_options.seed": "40",
        "models": (
            "- openai/gpt-5\r\n"
            "- {label: Qwen, model_name: qwen/qwen3, replicas: 1, "
            "model_options: {temperature: 0.3}}\r\n"
        ),
    }
    composed = compose("experiment", values)
    assert composed.error is None, composed.error
    assert composed.filename == "trio.yaml"
    path = tmp_path / composed.filename
    path.write_text(composed.yaml or "")
    _, planned = load_experiment(path)
    by_id = {run.config.run_id: run.config for run in planned}
    assert set(by_id) == {"trio-openai-gpt-5-A", "trio-openai-gpt-5-B", "trio-Qwen-A"}
    assert by_id["trio-openai-gpt-5-B"].model_options.seed == 41  # replicas offset the seed
    assert by_id["trio-Qwen-A"].model_options.temperature == 0.3
    assert by_id["trio-Qwen-A"].openai_client_config.api_key_env == "VLLM_KEY"
    assert all(config.cycle_count == 4 for config in by_id.values())


def test_bad_experiment_input_is_one_line_naming_the_problem() -> None:
    base = {SUBMITTED: "1", "experiment": "e", "cycle_count": "2"}
    twice = "- {model_name: a, label: X}\n- {model_name: b, label: X}"
    cases = {
        "no models": ({"models": ""}, "models"),
        "a label twice": ({"models": twice}, "label 'X'"),
        "bad YAML": ({"models": "- [unclosed"}, "models is not valid YAML"),
        "a key twice": ({"models": "- model_name: a\n  model_name: b"}, "'model_name'"),
        "bad name": ({"experiment": "a b/../"}, "experiment must be"),
        "a scripted run without a script": ({"models": "m", "backend": "scripted"}, "script"),
        "replicas zero": ({"models": "m", "replicas": "0"}, "replicas"),
    }
    for what, (values, expected) in cases.items():
        composed = compose("experiment", {**base, **values})
        assert composed.yaml is None, what
        assert composed.error and expected in composed.error, (what, composed.error)
        assert "\n" not in composed.error, what
