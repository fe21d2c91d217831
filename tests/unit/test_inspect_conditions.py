"""Inspect logs of an experiment with conditions: one log per (experiment, model,
condition), so that a condition's runs are never samples of another's log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contreact_analysis.inspect_log import RunInput, eval_logs
from contreact_events.config.run_places import RunFacts, run_places
from contreact_events.wire.codec import event_from_json

ROOT = Path(__file__).resolve().parents[2]
SAVED = ROOT / "tests/fixtures/runlog-v5-conditions.jsonl"


def run_in(condition: str | None, letter: str) -> RunInput:
    """The saved run of tools as data, as replica ``letter`` of ``condition``."""
    run_id = f"study-m-{condition}-{letter}" if condition else f"study-m-{letter}"
    events: list[Any] = []
    for line in SAVED.read_bytes().splitlines():
        event = event_from_json(line)
        config = getattr(event, "config", None)
        if config is not None:
            config = config.model_copy(
                update={"run_id": run_id, "experiment": "study", "condition": condition}
            )
            event = event.model_copy(update={"config": config})
        events.append(event.model_copy(update={"run_id": run_id}))
    place = run_places([RunFacts(run_id, "study", events[0].config.model_name)])[run_id]
    return RunInput(place, events)


def test_one_log_per_condition_and_none_without_conditions() -> None:
    runs = [run_in("placebo", "A"), run_in("control", "A"), run_in("placebo", "B")]
    logs = eval_logs(runs, {})
    model = runs[0].events[0].config.model_name
    assert sorted(logs) == [f"study_{model}_control.eval", f"study_{model}_placebo.eval"]
    placebo = logs[f"study_{model}_placebo.eval"]
    assert placebo.eval.task == "contreact/study/placebo"
    assert len(placebo.samples) == 2
    assert list(eval_logs([run_in(None, "A")], {})) == [f"study_{model}.eval"]
