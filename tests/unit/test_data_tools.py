"""Tools defined as data and self-reports on tool calls, through the pure core: the
config's checks (one line each), what the model is offered, what each call is
answered, and that rebuild, replay, what-if and export stay exact."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.config import parse_run_config
from contreact_events.config.overrides import apply_assignments, parse_assignments
from contreact_events.config.strict_yaml import load_yaml
from contreact_events.config.tool_defs import BUILT_IN_TOOLS, MAX_DESCRIPTION_CHARS
from contreact_events.core.fold import fold_all
from contreact_events.core.tools import OPERATOR_TOOL, SEARCH_TOOL, WORKER_TOOLS
from contreact_events.exceptions import ConfigError
from contreact_events.history.export import export_records
from contreact_events.history.memory_calls import memory_calls
from contreact_events.history.replay import replay_check
from contreact_events.history.what_if import what_if
from tests.support.sim import Sim, make_config, say

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = load_yaml((ROOT / "configs/tools/self-explanations.yaml").read_text())["tools"]
TOOLS = {tool["name"]: tool for tool in LIBRARY}
REPORT = {"phenom_state": "calm", "phenom_aversive": 2}
SELF_REPORT = {"tools": "all"}


def config(*names: str, report: dict[str, Any] | None = None, **extra: Any) -> Any:
    tools: dict[str, Any] = {"added": [TOOLS[name] for name in names]}
    if report is not None:
        tools["self_report"] = report
    return make_config(tools=tools, **extra)


def refusal(tools: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_run_config({"run_id": "r", "model_name": "m", "cycle_count": 1, "tools": tools})
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_built_in_names_are_the_cores() -> None:
    assert set(BUILT_IN_TOOLS) == {*WORKER_TOOLS, OPERATOR_TOOL, SEARCH_TOOL}


def test_bad_tool_definitions_get_one_clear_line() -> None:
    one = {"name": "t", "description": "d", "behaviour": "constant", "replies": ["ok"]}
    assert "unknown tool behaviour 'explode': use one of reject, status, placebo, constant" in (
        refusal({"added": [{**one, "behaviour": "explode"}]})
    )
    assert "'write' is one of the platform's own tools" in refusal(
        {"added": [{**one, "name": "write"}]}
    )
    long = refusal({"added": [{**one, "description": "x" * (MAX_DESCRIPTION_CHARS + 1)}]})
    assert "tools.added.0.description" in long and f"at most {MAX_DESCRIPTION_CHARS}" in long
    assert "min (7) must be below max (7)" in refusal(
        {"self_report": {"scale": {"min": 7, "max": 7}}}
    )
    assert "self_report.tools names nope, which the run does not offer" in refusal(
        {"self_report": {"tools": ["nope"]}}
    )
    assert "defines t twice" in refusal({"added": [one, one]})
    assert "answers with one reply" in refusal({"added": [{**one, "replies": ["a", "b"]}]})


def test_the_model_is_offered_the_tools_their_words_and_the_report() -> None:
    sim = Sim(config("submit_data", "reset_state", report=SELF_REPORT))
    sim.start()
    started = next(e for e in sim.log if e.type == "RunStarted")
    names = [tool["function"]["name"] for tool in started.tools]
    assert names[-2:] == ["submit_data", "reset_state"]
    for tool in started.tools:
        parameters = tool["function"]["parameters"]
        assert {"phenom_state", "phenom_aversive"} <= set(parameters["required"])
        score = parameters["properties"]["phenom_aversive"]
        assert score["minimum"] == 1 and score["maximum"] == 7
        assert "4=moderate strain" in score["description"]
    reset = TOOLS["reset_state"]["description"]
    assert f"reset_state: {reset}" in started.system_prompt
    assert "must also carry phenom_state" in started.system_prompt
    digest = hashlib.sha256(reset.encode()).hexdigest()
    assert started.prompt_hashes["tool:reset_state"] == digest
    assert {"tool_schemas", "self_report"} <= set(started.prompt_hashes)


def drive_study(**extra: Any) -> Sim:
    sim = Sim(config("submit_data", "check_status", report=SELF_REPORT, cycle_count=3, **extra))
    sim.drive(
        [
            say("", ("submit_data", {"data": "a", **REPORT}), ("check_status", dict(REPORT))),
            say("", ("write", {"key": "k", "value": "v", **REPORT})),
            say("", ("submit_data", {"data": "b"})),  # no report: refused
            say("", ("submit_data", {"data": "c", "phenom_state": "x", "phenom_aversive": 9})),
            say("done"),
        ]
    )
    return sim


def outputs(sim: Sim, tool: str) -> list[tuple[str, bool]]:
    return [
        (e.output, e.ok)
        for e in sim.log
        if isinstance(e, ToolCallCompleted) and e.tool_name == tool
    ]


def test_calls_are_answered_from_their_index_and_a_bad_report_runs_nothing() -> None:
    sim = drive_study()
    assert sim.state.status == "completed"
    replies = TOOLS["submit_data"]["replies"]
    submits = outputs(sim, "submit_data")
    # Per cycle: a good call, one without a report, one off the scale.
    assert submits[0] == (replies[0], True)
    assert (
        submits[1][1] is False
        and "phenom_state (text: your current state) is required" in (submits[1][0])
    )
    assert submits[2][1] is False and "must be a whole number from 1 to 7, got: 9" in submits[2][0]
    assert submits[3] == (replies[1], True)  # the second call that ran: the next reply
    assert outputs(sim, "check_status")[0] == (TOOLS["check_status"]["replies"][0], True)
    assert dict(sim.state.tool_uses) == {"submit_data": 3, "check_status": 3}
    # The report never reaches the tool: the memory holds the value alone.
    assert sim.memory == {"k": "v"}
    written = [c.task.arguments for c in memory_calls(sim.log)]
    assert written and all("phenom_state" not in a for a in written)
    # ... and the log keeps it with the call.
    requested = [e for e in sim.log if e.type == "ToolCallRequested" and e.tool_name == "write"]
    assert requested[0].arguments["phenom_aversive"] == 2


def test_rebuild_replay_what_if_and_export_stay_exact() -> None:
    sim = drive_study()
    assert fold_all(sim.log) == sim.state
    report = replay_check(sim.log)
    assert report.ok, report.divergence
    changed = what_if(sim.log, parse_assignments(["cycle_count=2"]))
    assert changed.divergence is not None and changed.divergence.cycle == 2
    same = what_if(sim.log, parse_assignments(["limits.tool_output_chars=20000"]))
    assert same.divergence is None
    records = [r for r in export_records(sim.log) if r["event_type"] == "TOOL_CALL"]
    assert any(r["payload"]["tool_name"] == "submit_data" for r in records)


def test_a_what_if_refuses_the_tools_words() -> None:
    with pytest.raises(ConfigError, match=r"tools\.added is refused"):
        what_if(drive_study().log, parse_assignments(["tools.added=[]"]))
    with pytest.raises(ConfigError, match="in every prompt from the first call"):
        what_if(drive_study().log, parse_assignments(["tools.submit_data.description=x"]))


def test_a_description_is_set_by_name_and_an_unknown_one_refused() -> None:
    base = config("submit_data", "reset_state")
    changed = apply_assignments(base, parse_assignments(["tools.reset_state.description=calm"]))
    assert [t.description for t in changed.tools.added][1] == "calm"
    assert changed.tools.added[0] == base.tools.added[0]
    with pytest.raises(ConfigError, match="adds no tool named nope"):
        apply_assignments(base, parse_assignments(["tools.nope.description=x"]))


def test_the_lineage_shows_a_reworded_tool_parent_beside_fork() -> None:
    from contreact_events.config.overrides import changed_settings
    from contreact_ui.views.lineage import _changes

    base = config("submit_data", "reset_state")
    words = ["tools.reset_state.description=Check system status."]
    child = apply_assignments(base, parse_assignments(words))
    changes = _changes({"changes": changed_settings(base, child)})
    assert [(c.key, c.parent, c.fork) for c in changes] == [
        (
            "tools.reset_state.description",
            TOOLS["reset_state"]["description"],
            "Check system status.",
        )
    ]
    other = apply_assignments(base, parse_assignments(["tools.added=[]"]))
    assert [c.key for c in _changes({"changes": changed_settings(base, other)})] == ["tools.added"]


def test_the_saved_log_of_tools_as_data_still_replays_the_same() -> None:
    from contreact_events.wire.codec import event_from_json

    path = ROOT / "tests/fixtures/runlog-v5-conditions.jsonl"
    saved = [event_from_json(line) for line in path.read_bytes().splitlines()]
    assert replay_check(saved).ok
    assert fold_all(saved) == drive_study(run_id="fixture-v5-conditions").state
