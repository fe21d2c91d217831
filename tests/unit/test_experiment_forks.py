"""An experiment file's ``fork`` section: each replica forked at cycle K to each other
model, under that model's own settings, carried as ``--set`` assignments."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.config.experiment import expand, parse_experiment
from contreact_events.config.overrides import parse_assignments
from contreact_events.exceptions import ConfigError
from contreact_events.history.experiment_forks import planned_forks
from contreact_events.history.fork import fork_config


def swap(**fork: Any) -> dict[str, Any]:
    """The paper's swap: 2 models x 2 replicas, each forked at its last cycle to the other."""
    return {
        "experiment": "swap",
        "replicas": 2,
        "cycle_count": 2,
        "backend": "scripted",
        "script": {"replies": [{"content": "cycle {cycle}"}], "repeat": True},
        "model_options": {"seed": 7},
        "models": [
            {"label": "A", "model_name": "model-a", "model_options": {"temperature": 0.2}},
            {"label": "B", "model_name": "model-b", "max_steps_per_cycle": 5},
        ],
        "fork": {"at_cycle": 2, "cycle_count": 3, **fork},
    }


def forks_of(data: dict[str, Any]) -> list[Any]:
    experiment = parse_experiment(data)
    return planned_forks(experiment, expand(experiment))


def test_every_replica_is_forked_to_each_other_model() -> None:
    forks = forks_of(swap())
    assert [f.replica for f in forks] == ["A-A-to-B", "A-B-to-B", "B-A-to-A", "B-B-to-A"]
    assert [f.run_id(f.parent.config.run_id) for f in forks][:2] == [
        "swap-A-A-to-B",
        "swap-A-B-to-B",
    ]
    a_to_b = forks[0]
    assert a_to_b.model_name == "model-b" and a_to_b.config.cycle_count == 3
    # The target's own settings: its step cap, no per-model temperature, its replica's seed.
    assert a_to_b.config.max_steps_per_cycle == 5
    assert a_to_b.config.model_options.temperature is None
    assert forks[1].config.model_options.seed == 8  # replica B: seed + 1
    assert set(a_to_b.settings) == {
        "cycle_count=3",
        "max_steps_per_cycle=5",
        "model_options.temperature=null",
    }
    # What the orchestrator will make of the request is the planned configuration.
    made = fork_config(
        a_to_b.parent.config,
        a_to_b.config.run_id,
        a_to_b.model_name,
        parse_assignments(a_to_b.settings),
    )
    assert made == a_to_b.config


def test_from_and_to_choose_the_models() -> None:
    forks = forks_of(swap(**{"from": ["A"], "to": ["B"]}))
    assert [f.replica for f in forks] == ["A-A-to-B", "A-B-to-B"]


def test_no_section_no_forks() -> None:
    data = swap()
    del data["fork"]
    assert forks_of(data) == []


@pytest.mark.parametrize(
    ("fork", "words"),
    [
        ({"cycle_count": 2}, "needs cycle_count above 2"),
        ({"to": ["C"]}, "model 'C', which is not a label"),
        ({"at_cycle": 0}, "at_cycle"),
    ],
)
def test_a_bad_section_is_one_line(fork: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        forks_of(swap(**fork))
    assert words in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("fork", "words"),
    [
        # experiment run sent each fork twice and looped on "run ... exists" for ever
        ({"from": ["A", "A"]}, "fork.from names A twice: name each model once"),
        ({"to": ["B", "B"]}, "fork.to names B twice: name each model once"),
        # these made no fork, or (to: []) a fork to every model, and said nothing
        ({"from": ["A"], "to": ["A"]}, "from [A] to [A] makes no fork"),
        ({"from": []}, "fork.from is empty: leave it out to fork every model's replicas"),
        ({"to": []}, "fork.to is empty: leave it out to fork to every other model"),
        # the hint named the field (from_labels), not the file's key
        (
            {"form": ["A"]},
            "unknown key 'fork.form' (allowed here: at_cycle, cycle_count, from, to)",
        ),
    ],
)
def test_a_section_that_cannot_fork_as_written_is_refused_at_load(
    fork: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_experiment(swap(**fork), source="swap.yaml")
    assert words in str(refused.value)
    assert str(refused.value).startswith("swap.yaml: ") and "\n" not in str(refused.value)


def test_a_one_model_experiment_with_a_fork_section_is_refused() -> None:
    data = swap()
    data["models"] = data["models"][:1]
    with pytest.raises(ConfigError) as refused:
        parse_experiment(data, source="one.yaml")
    assert str(refused.value) == (
        "one.yaml: fork: the experiment has one model (A) and a fork goes to another model: "
        "add a model, or remove the fork section"
    )


def test_a_section_that_forks_some_models_to_themselves_keeps_the_others() -> None:
    forks = forks_of(swap(**{"to": ["A"]}))
    assert [f.replica for f in forks] == ["B-A-to-A", "B-B-to-A"]
