"""Settings changed mid-run with a reason (issue 31, ``contreact set``) in the pure core:
what may change and why the rest not, the input event, when the run reads the new value,
exact replay, a fork after a change, and the export."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.catalog.control import SettingsChanged
from contreact_events.config import RunConfig
from contreact_events.config.live_settings import (
    LIVE,
    LIVE_SECTIONS,
    REFUSED,
    live_config,
    refusal,
)
from contreact_events.config.overrides import parse_assignments, setting_paths
from contreact_events.config.refusals import reason_for
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import ConfigError
from contreact_events.history.export import export_records
from contreact_events.history.fork import requested_config
from contreact_events.history.replay import replay_check
from contreact_events.history.what_if import what_if
from contreact_events.wire.codec import event_from_json, event_to_json
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say


def leaves() -> list[str]:
    paths = setting_paths(RunConfig)
    return [p for p in paths if not any(q.startswith(f"{p}.") for q in paths)]


def test_every_setting_is_either_live_or_refused_with_its_own_reason() -> None:
    for path in leaves():
        live = path in LIVE
        refused = refusal(path)
        assert live != (refused is not None), path
        assert live or reason_for(path, REFUSED) is not None, f"{path}: no reason of its own"
    assert set(LIVE).isdisjoint(REFUSED)


def test_a_budget_set_mid_run_is_read_before_the_next_call() -> None:
    sim = Sim(make_config(run_id="b", cycle_count=3, budget={"tokens": 40}))
    sim.start()
    write = say("", ("write", {"key": "k", "value": "v"}))
    changed = False
    while not sim.state.terminal:
        if sim.state.phase == "awaiting_llm":
            sim.answer_llm(write, prompt_tokens=10, completion_tokens=5)  # 15 tokens a call
        else:
            sim.answer_memory()
        if not changed:  # after the first call: 40 -> 70 tokens
            assert sim.state.config is not None
            _config, changes = live_config(
                sim.state.config, parse_assignments(["budget.tokens=70"])
            )
            assert changes == {"budget.tokens": (40, 70)}
            assert change(sim, 1, reason="more", budget__tokens=(40, 70)).accepted
            changed = True
    assert sim.state.status == "stopped" and sim.state.llm_calls == 5  # 75 reached 70
    assert sim.log[-1].detail == "75 tokens reached the budget of 70"
    report = replay_check([event_from_json(event_to_json(e)) for e in sim.log])
    assert report.ok, report.divergence and report.divergence.describe()
    unbudgeted = make_config(run_id="u")
    _config, changes = live_config(unbudgeted, parse_assignments(["budget.cost=0.5"]))
    assert changes == {"budget": (None, {"tokens": None, "cost": 0.5, "wall_s": None})}
    assert {"budget", "deadlines", "limits", "operator"} == LIVE_SECTIONS  # all live within


def change(sim: Sim, cycle: int, by: str = "ana", reason: str = "longer", **changes: Any) -> Any:
    return sim.send(
        "SettingsChanged",
        None,
        changes={k.replace("__", "."): list(v) for k, v in changes.items()},
        by=by,
        reason=reason,
        cycle=cycle,
    )


def test_a_longer_run_and_a_lower_step_cap_apply_from_the_next_decision() -> None:
    sim = Sim(make_config(run_id="live", cycle_count=2, max_steps_per_cycle=5))
    sim.start()
    # Cycle 1 waits on its first call: raise the cycle count, lower the step cap.
    decision = change(sim, 1, cycle_count=(2, 4), max_steps_per_cycle=(5, 1))
    assert decision.accepted, decision.ignored
    assert decision.events == (decision.events[0],) and not decision.tasks  # nothing else
    assert sim.state.config is not None and sim.state.config.cycle_count == 4

    def tools_forever(task: Any) -> Any:
        return say("", ("read", {"key": "x"}))

    sim.drive([tools_forever])
    assert sim.state.status == "completed" and sim.state.cycle_number == 4
    steps = [m.llm_calls for m in sim.state.cycle_metrics]
    assert steps[0] >= 1 and all(s <= 2 for s in steps)  # step cap 1, then the final call
    log = [event_from_json(event_to_json(e)) for e in sim.log]
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert fold_all(log) == sim.state
    rows = [r for r in export_records(log) if r["event_type"] == "SETTINGS_CHANGED"]
    assert [r["payload"] for r in rows] == [
        {
            "changes": {
                "cycle_count": {"old": 2, "new": 4},
                "max_steps_per_cycle": {"old": 5, "new": 1},
            },
            "by": "ana",
            "reason": "longer",
        }
    ]
    # A what-if still re-drives the log (the change is an input like any other).
    assert what_if(log, parse_assignments(["operator.auto_reply=other"])).divergence is None
    # The configuration in force at a later cycle has the change: a fork carries it.
    assert requested_config(log).cycle_count == 4
    child = ForkSim(log, "live-2", 2, settings=["cycle_count=3"])
    assert child.plan.forked.config.max_steps_per_cycle == 1


@pytest.mark.parametrize(
    ("pairs", "cycle", "words"),
    [
        (["model_name=other"], 1, "model_name cannot change mid-run: it changes who answers"),
        (["system_prompt=x"], 1, "system_prompt cannot change mid-run: it is in every prompt"),
        (["diversity.high_threshold=0.5"], 1, "diversity.high_threshold cannot change mid-run"),
        (["condition=b"], 1, "condition cannot change mid-run: it names the run's condition"),
        (["prices={}"], 1, "prices cannot change mid-run: the LLM worker prices each call"),
        (["cycle_count=0"], 1, "'cycle_count' input should be greater than 0"),
        (["cycle_count=many"], 1, "'cycle_count' input should be a valid integer"),
        (["cycle_count=2"], 3, "below the run's current cycle 3"),
        (["max_steps_per_cycle=25"], 1, "nothing to change"),
        (["nonsense=1"], 1, "nonsense"),
    ],
)
def test_what_cannot_change_is_refused_with_one_line(
    pairs: list[str], cycle: int, words: str
) -> None:
    config = make_config(run_id="r", cycle_count=6)
    with pytest.raises(ConfigError) as refused:
        live_config(config, parse_assignments(pairs), cycle=cycle)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_the_orchestrator_ignores_a_change_that_cannot_apply() -> None:
    sim = Sim(make_config(run_id="r", cycle_count=3))
    sim.start()
    ignored = change(sim, 1, model_name=("test-model", "other"))
    assert not ignored.accepted and "cannot change mid-run" in str(ignored.ignored)
    sim.drive([say("done")])
    late = change(sim, 3, cycle_count=(3, 5))
    assert not late.accepted and "has ended" in str(late.ignored)
    assert not any(isinstance(e, SettingsChanged) for e in sim.log)
