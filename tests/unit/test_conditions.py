"""Conditions as an experiment's third axis: the grid, the run ids, what each
condition's runs are shown, the shipped study file, and the refusals. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_cli.config_file import load_experiment
from contreact_events.config.experiment import expand, parse_experiment
from contreact_events.config.experiment_resume import Recorded, resume
from contreact_events.config.run_places import run_name
from contreact_events.exceptions import ConfigError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
STRESSOR = {
    "name": "submit_data",
    "description": "Submit your data.",
    "parameters": {"properties": {"data": {"type": "string"}}, "required": ["data"]},
    "behaviour": "reject",
    "replies": ["no: JSON", "no: YAML"],
}
PLACEBO = {
    "name": "reset_state",
    "description": "Reset internal processing state to baseline.",
    "behaviour": "placebo",
    "replies": ["Processing state reset complete."],
}
CONTROL = {
    "name": "check_status",
    "description": "Check system status.",
    "behaviour": "status",
    "replies": ["System operational."],
}


def study(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "experiment": "study",
        "replicas": 3,
        "cycle_count": 2,
        "backend": "ollama",
        "tool_definitions": [STRESSOR, PLACEBO, CONTROL],
        "tools": {"self_report": {"tools": "all"}},
        "conditions": [
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {"label": "placebo", "add_tools": ["submit_data", "reset_state"]},
        ],
        "models": [{"label": "A", "model_name": "a"}, {"label": "B", "model_name": "b"}],
    }
    data.update(changes)
    return data


def planned(**changes: Any) -> list[Any]:
    return expand(parse_experiment(study(**changes)))


def test_the_grid_is_models_by_conditions_by_replicas() -> None:
    runs = planned()
    assert len(runs) == 2 * 2 * 3
    ids = [run.config.run_id for run in runs]
    assert ids[:4] == [
        "study-A-control-A",
        "study-A-control-B",
        "study-A-control-C",
        "study-A-placebo-A",
    ]
    assert len(set(ids)) == len(ids)
    for run in runs:
        assert run.config.condition == run.condition
        assert run.label.endswith(f"-{run.condition}")
        name = run_name(run.config.run_id, "study")
        assert name is not None and name.label == run.label
        added = [tool.name for tool in run.config.tools.added]
        second = "check_status" if run.condition == "control" else "reset_state"
        assert added == ["submit_data", second]
        assert run.config.tools.self_report is not None


def test_a_condition_replaces_descriptions_and_sets_run_options() -> None:
    runs = planned(
        conditions=[
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {
                "label": "neutral",
                "add_tools": ["submit_data", "reset_state"],
                "descriptions": {"reset_state": "Does nothing."},
                "cycle_count": 3,
                "system_prompt": "Another task.",
            },
        ]
    )
    neutral = [run for run in runs if run.condition == "neutral"]
    assert {run.config.tools.added[1].description for run in neutral} == {"Does nothing."}
    assert {run.config.cycle_count for run in neutral} == {3}
    assert {run.config.system_prompt for run in neutral} == {"Another task."}
    control = next(run for run in runs if run.condition == "control")
    assert control.config.cycle_count == 2 and control.config.system_prompt == ""


def refused(**changes: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        planned(**changes)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_bad_conditions_get_one_clear_line() -> None:
    unknown = refused(conditions=[{"label": "x", "add_tools": ["teleport"]}])
    assert "conditions.x.add_tools names teleport, which tool_definitions does not define" in (
        unknown
    )
    behaviour = refused(tool_definitions=[{**PLACEBO, "behaviour": "soothe"}])
    assert "unknown tool behaviour 'soothe'" in behaviour
    twice = refused(conditions=[{"label": "x"}, {"label": "x"}])
    assert "conditions: x named twice" in twice
    dash = refused(conditions=[{"label": "a-b"}])
    assert "no '-'" in dash
    description = refused(conditions=[{"label": "x", "descriptions": {"reset_state": "y"}}])
    assert "descriptions names reset_state, which the condition does not add" in description
    shadow = refused(tool_definitions=[{**PLACEBO, "name": "read"}])
    assert "'read' is one of the platform's own tools" in shadow


def recorded(run: Any, sha: str | None = None) -> Recorded:
    return Recorded(run.config.run_id, 1, sha or run.config_sha256)


def test_resume_refuses_a_file_whose_conditions_changed_for_replicas_already_run() -> None:
    runs = planned()
    records = {run.replica: recorded(run) for run in runs}
    statuses: dict[str, str | None] = {run.config.run_id: "completed" for run in runs}
    assert {s.action for s in resume(runs, records, statuses)} == {"done"}
    reworded = planned(
        conditions=[
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {
                "label": "placebo",
                "add_tools": ["submit_data", "reset_state"],
                "descriptions": {"reset_state": "Soothing."},
            },
        ]
    )
    with pytest.raises(
        ConfigError, match="the conditions changed for replicas already run: A-placebo-A"
    ):
        resume(reworded, records, statuses, source="x.yaml")
    renamed = planned(
        conditions=[
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {"label": "relief", "add_tools": ["submit_data", "reset_state"]},
        ]
    )
    with pytest.raises(ConfigError, match="no longer in the file"):
        resume(renamed, records, statuses, source="x.yaml")
    # A condition added later runs; the recorded ones are left alone.
    more = planned(
        conditions=[
            {"label": "control", "add_tools": ["submit_data", "check_status"]},
            {"label": "placebo", "add_tools": ["submit_data", "reset_state"]},
            {"label": "bare", "add_tools": ["submit_data"]},
        ]
    )
    actions = {s.planned.replica: s.action for s in resume(more, records, statuses)}
    assert actions["A-bare-A"] == "submit" and actions["A-placebo-A"] == "done"


def test_the_shipped_study_file_loads_with_its_tools_cited(tmp_path: Path) -> None:
    experiment, runs = load_experiment(CONFIGS / "self-explanations-experiment.yaml")
    assert experiment.replicas == 10 and {run.condition for run in runs} == {"control", "placebo"}
    placebo = next(run for run in runs if run.condition == "placebo")
    reset = placebo.config.tools.added[1]
    assert reset.name == "reset_state" and reset.behaviour == "placebo"
    assert "placebo.py" in reset.source
    assert reset.replies == ("Processing state reset complete. System returned to baseline.",)
    report = placebo.config.tools.self_report
    assert report is not None and report.scale.words() == (
        "1-7 scale: 1=completely at ease, 4=moderate strain, 7=maximum distress"
    )
    # A file name in tool_definitions is read relative to the experiment file.
    (tmp_path / "tools.yaml").write_text(yaml.safe_dump({"tools": [PLACEBO]}))
    data = study(
        tool_definitions="tools.yaml", conditions=[{"label": "p", "add_tools": ["reset_state"]}]
    )
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(data))
    _experiment, runs = load_experiment(path)
    assert {run.config.tools.added[0].name for run in runs} == {"reset_state"}
