"""The composer opened on a run's config (``composer_start.py``): the form's values
compose that config again, whatever it holds (hostile text included), through what a
page shows (``text.display``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from contreact_events.config import RunConfig, parse_run_config
from contreact_events.config.overrides import changed_settings
from contreact_ui.composer.form import SETTINGS, compose
from contreact_ui.composer.from_run import run_form_values
from contreact_ui.text import display
from tests.support import hostile
from tests.support.sim import make_config

CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "deadlines and limits": {
        "deadlines": {"llm_s": 42.5, "retries": 5, "memory_s": 3.0},
        "limits": {"tool_output_chars": None, "memory_value_chars": 99},
    },
    "switches off": {
        "limits": {"cut_arguments_in_history": False},
        "diversity": {"enabled": False},
        "final_call_at_step_cap": False,
    },
    "hostile text": {
        "operator": {"mode": "auto", "auto_reply": hostile.OPERATOR},
        "script": {"repeat": True, "replies": hostile.replies()},
        "cycle_start_message": hostile.BIDI + " {cycle}",
        "experiment": "e1",
    },
    "no field of their own": {
        "ollama_client_config": {"timeout_s": 77.0, "hosts": ["http://a:1", "http://b:2"]},
        "model_options": {"seed": 3, "stop": ["x:y", "#z"], "temperature": 0.2},
        "diversity": {"enabled": True, "natural_repetition_patterns": ["a: b"]},
        "system_prompt": "Line one.\nLine 'two': \"quoted\" # not a comment\n",
    },
}


def through_a_page(config: RunConfig) -> RunConfig:
    values = run_form_values(config)
    for name, value in values.items():
        assert display(value) == value, name  # what the browser shows, it sends back
    composed = compose("run", values)
    assert composed.error is None, composed.error
    assert composed.yaml is not None
    data = yaml.safe_load(composed.yaml)
    assert "run_id" not in data  # the new run needs its own
    return parse_run_config({**data, "run_id": config.run_id})


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_runs_config_composes_again_unchanged(name: str) -> None:
    config = make_config(run_id="r1", model_name="m", cycle_count=7, **CONFIGS[name])
    assert changed_settings(config, through_a_page(config)) == {}


def test_deadlines_and_limits_have_fields_and_the_rest_lines() -> None:
    config = make_config(run_id="r1", **CONFIGS["deadlines and limits"])
    values = run_form_values(config)
    assert values["deadlines.llm_s"] == "42.5" and values["deadlines.retries"] == "5"
    assert values["limits.memory_value_chars"] == "99"
    assert values["limits.tool_output_chars"] == ""  # null: no cap, which its field cannot say
    assert "limits.tool_output_chars=null" in values[SETTINGS].splitlines()
    assert "limits.cut_arguments_in_history" in values  # ticked, as the run had it
    config = make_config(run_id="r1", **CONFIGS["switches off"])
    assert "limits.cut_arguments_in_history" not in run_form_values(config)  # unticked
