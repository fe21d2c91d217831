"""Experiment files: models x replicas expanded into run configs, predictable run ids,
and what resubmitting does per replica. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_cli.config_file import load_config, load_experiment
from contreact_events.config import RUN_ID_PATTERN, RunConfig
from contreact_events.config.experiment import (
    MAX_REPLICAS,
    RUN_ONLY_KEYS,
    RunOptions,
    config_sha256,
    expand,
    parse_experiment,
    replica_letter,
)
from contreact_events.config.experiment_resume import Recorded, resume
from contreact_events.exceptions import ConfigError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def experiment(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "experiment": "exp",
        "replicas": 2,
        "cycle_count": 4,
        "backend": "ollama",
        "model_options": {"seed": 10, "temperature": 0.5, "top_p": 0.9},
        "operator": {"mode": "auto", "auto_reply": "ok"},
        "models": [
            {"label": "Fast", "model_name": "llama3.2:3b"},
            {
                "model_name": "qwen2.5:7b",
                "replicas": 3,
                "model_options": {"temperature": 0.1},
                "operator": {"auto_reply": "noted"},
                "cycle_count": 2,
            },
        ],
    }
    data.update(changes)
    return data


def runs(**changes: Any) -> list[Any]:
    return expand(parse_experiment(experiment(**changes)))


def test_run_options_are_the_run_configs_options() -> None:
    assert set(RunOptions.model_fields) == set(RunConfig.model_fields) - RUN_ONLY_KEYS


def test_models_times_replicas_with_predictable_ids() -> None:
    planned = runs()
    assert [p.config.run_id for p in planned] == [
        "exp-Fast-A",
        "exp-Fast-B",
        "exp-qwen2.5-7b-A",
        "exp-qwen2.5-7b-B",
        "exp-qwen2.5-7b-C",
    ]
    assert [p.replica for p in planned][:2] == ["Fast-A", "Fast-B"]
    assert {p.config.experiment for p in planned} == {"exp"}
    assert planned[0].attempt(1).run_id == "exp-Fast-A"
    assert planned[0].attempt(3).run_id == "exp-Fast-A.3"


def test_per_model_options_override_the_shared_ones_key_by_key() -> None:
    fast, qwen = runs()[0].config, runs()[2].config
    assert fast.model_options.as_options() == {"seed": 10, "temperature": 0.5, "top_p": 0.9}
    assert qwen.model_options.as_options() == {"seed": 10, "temperature": 0.1, "top_p": 0.9}
    assert (fast.cycle_count, qwen.cycle_count) == (4, 2)
    assert (qwen.operator.mode, qwen.operator.auto_reply) == ("auto", "noted")
    assert fast.backend == qwen.backend == "ollama"


def test_replicas_get_their_own_seeds_unless_asked_otherwise() -> None:
    seeds = [p.config.model_options.seed for p in runs()]
    assert seeds == [10, 11, 10, 11, 12]
    same = [p.config.model_options.seed for p in runs(replica_seeds="same")]
    assert same == [10] * 5
    unseeded = runs(model_options={"temperature": 0.3})
    assert {p.config.model_options.seed for p in unseeded} == {None}


def test_replica_letters() -> None:
    assert [replica_letter(i) for i in (0, 1, 25, 26, 27, 51, 52)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"run_id": "x"}, "'run_id' is set per run by the experiment"),
        ({"model_name": "x"}, "'model_name' belongs to each entry of 'models'"),
        ({"colour": "red"}, "unknown key 'colour' (allowed here: cycle_count"),
        ({"experiment": "a b"}, "experiment must be 1-48 letters"),
        ({"replicas": 0}, "'replicas' input should be greater than or equal to 1"),
        ({"models": []}, "'models' tuple should have at least 1 item"),
        ({"models": [{"label": "x"}]}, "missing required key 'models.0.model_name'"),
        ({"models": [{"model_name": "m", "label": "no/slash"}]}, "label must be 1-40"),
        ({"models": [{"model_name": "m", "run_id": "r"}]}, "unknown key 'models.0.run_id'"),
        ({"cycle_count": 0}, "'cycle_count' input should be greater than 0"),
    ],
)
def test_bad_files_get_one_line_naming_the_problem(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_experiment(experiment(**changes), source="x.yaml")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value) and str(raised.value).startswith("x.yaml: ")


def test_a_run_that_is_not_a_valid_run_says_which_model() -> None:
    data = experiment(models=[{"model_name": "m", "backend": "scripted"}])
    with pytest.raises(ConfigError, match=r"models\[0\] \(m\): backend 'scripted' needs a"):
        expand(parse_experiment(data), source="x.yaml")


def test_labels_must_be_unique() -> None:
    data = experiment(models=[{"model_name": "a:1"}, {"model_name": "b", "label": "a-1"}])
    with pytest.raises(ConfigError, match="label 'a-1' is taken by a:1: give one a 'label'"):
        expand(parse_experiment(data))


def test_the_longest_names_still_make_valid_run_ids() -> None:
    data = experiment(experiment="e" * 48, replicas=MAX_REPLICAS)
    data["models"] = [{"model_name": "m", "label": "l" * 40}]
    last = expand(parse_experiment(data))[-1]
    assert last.letter == "ZZ"
    assert RUN_ID_PATTERN.match(last.attempt(10**9).run_id)


def recorded(planned: Any, attempt: int = 1, sha: str | None = None) -> Recorded:
    run_id = planned.attempt(attempt).run_id
    return Recorded(run_id, attempt, sha or planned.config_sha256)


def test_resubmitting_resumes_what_did_not_complete() -> None:
    planned = runs()
    records = {p.replica: recorded(p) for p in planned[:4]}
    records[planned[3].replica] = recorded(planned[3], attempt=2)
    statuses: dict[str, str | None] = {
        "exp-Fast-A": "completed",
        "exp-Fast-B": "running",
        "exp-qwen2.5-7b-A": "cancelled",
        "exp-qwen2.5-7b-B.2": "failed",
    }
    plan = resume(planned, records, statuses)
    assert [(s.action, s.config.run_id) for s in plan] == [
        ("done", "exp-Fast-A"),
        ("running", "exp-Fast-B"),
        ("retry", "exp-qwen2.5-7b-A.2"),
        ("retry", "exp-qwen2.5-7b-B.3"),
        ("submit", "exp-qwen2.5-7b-C"),
    ]
    assert [s.sends for s in plan] == [False, False, True, True, True]
    # a request not taken yet (no trace of the run) is sent again under its own id
    (again,) = resume(planned[:1], {planned[0].replica: recorded(planned[0])}, {})
    assert (again.action, again.config.run_id) == ("resend", "exp-Fast-A")


def test_a_changed_configuration_is_not_resumed() -> None:
    planned = runs()
    records = {planned[0].replica: recorded(planned[0], sha="0" * 64)}
    with pytest.raises(ConfigError, match="configuration of Fast-A differs"):
        resume(planned, records, {"exp-Fast-A": "completed"}, source="x.yaml")
    # what a replica runs is compared, its run id left out
    assert config_sha256(planned[0].attempt(2)) == planned[0].config_sha256


def test_the_shipped_experiment_files_load(tmp_path: Path) -> None:
    for path in sorted(CONFIGS.glob("*experiment*.yaml")):
        _experiment, planned = load_experiment(path)
        assert planned, path
    paper, planned = load_experiment(CONFIGS / "paper-experiment.yaml")
    assert len(planned) == 18 and paper.replicas == 3
    labels = [p.label for p in planned[::3]]
    assert labels == ["Sonnet", "Opus", "GPT5", "O3", "Grok", "Gemini"]
    o3 = next(p.config for p in planned if p.label == "O3")
    assert o3.model_options.reasoning_effort == "medium" and o3.backend == "openai"
    assert o3.openai_client_config.api_key_env == "OPENROUTER_API_KEY"


def test_files_named_in_an_experiment_are_read_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("Be brief.")
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump([{"content": "r"}]))
    data = experiment(
        system_prompt_file="prompt.txt",
        models=[{"model_name": "m", "backend": "scripted", "script": "replies.yaml"}],
    )
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    _experiment, planned = load_experiment(path)
    config = planned[0].config
    assert config.system_prompt == "Be brief."
    assert config.script is not None and config.script.replies[0].content == "r"


def test_a_file_given_to_the_wrong_command_names_the_right_one(tmp_path: Path) -> None:
    experiment_file = tmp_path / "exp.yaml"
    experiment_file.write_text(yaml.safe_dump(experiment()))
    with pytest.raises(ConfigError) as raised:
        load_config(experiment_file)
    assert str(raised.value) == (
        f"{experiment_file} is an experiment file (it lists 'models'): run it with "
        f"`contreact experiment run {experiment_file}`"
    )
    run_file = tmp_path / "run.yaml"
    run_file.write_text(yaml.safe_dump({"model_name": "m", "cycle_count": 2}))
    with pytest.raises(ConfigError) as raised:
        load_experiment(run_file)
    assert f"`contreact run {run_file}`" in str(raised.value)
