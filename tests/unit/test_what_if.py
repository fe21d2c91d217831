"""What-if replay: the recorded inputs re-driven with a setting changed, no model called."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog import Event
from contreact_events.catalog.control import SettingsChanged
from contreact_events.catalog.run import RunRequested
from contreact_events.config.overrides import parse_assignments, setting_paths
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import ConfigError, NotReplayable
from contreact_events.history.fork import requested_config
from contreact_events.history.what_if import WhatIfReport, what_if
from contreact_events.history.what_if_keys import ALLOWED, REFUSED, refusal
from contreact_events.wire.codec import event_from_json
from contreact_events.wire.tasks import EmbedTask
from tests.support.sim import Sim, make_config, say

RESIDUAL = math.sqrt(1 - 0.74**2)
VECTORS = {
    1: [1.0, 0.0, 0.0, 0.0, 0.0],
    2: [0.0, 1.0, 0.0, 0.0, 0.0],
    3: [0.0, 0.0, 1.0, 0.0, 0.0],
    4: [0.74, 0.0, 0.0, RESIDUAL, 0.0],  # cosine 0.74 with cycle 1, 0 with the others
    5: [0.0, 0.0, 0.0, 0.0, 1.0],
}
"""The reflection vectors by cycle: the only similarity above 0 is cycle 4's, 0.74."""


class KnownVectors(Sim):
    """The embedder's part with chosen vectors, so the similarities are known."""

    def answer_embedding(self) -> Any:
        task = self.task()
        assert isinstance(task, EmbedTask) and task.kind == "reflection", task
        return self.send(
            "ReflectionEmbedded",
            task.task_id,
            task_id=task.task_id,
            cycle=task.cycle,
            vector=VECTORS[task.cycle],
            model="chosen",
        )


def recorded(**overrides: Any) -> list[Event]:
    """A 5-cycle run: a write and a read, then the reflection, in every cycle; the
    moderate threshold is 0.75, so cycle 4's 0.74 gave no advisory."""
    settings: dict[str, Any] = {
        "cycle_count": 5,
        "diversity": {"enabled": True, "moderate_threshold": 0.75, "high_threshold": 0.8},
        "max_steps_per_cycle": 5,
    }
    settings.update(overrides)
    sim = KnownVectors(make_config(**settings))
    sim.drive(
        [
            say("", ("write", {"key": "plan", "value": "explore"})),
            say("", ("read", {"key": "plan"})),
            say("a reflection"),
        ]
    )
    assert sim.state.status == "completed"
    return sim.log


def run(events: list[Event], *pairs: str) -> WhatIfReport:
    return what_if(events, parse_assignments(pairs, option="--what-if"))


def test_lowering_the_moderate_threshold_reports_the_first_cycle_it_changes() -> None:
    report = run(recorded(), "diversity.moderate_threshold=0.70")
    divergence = report.divergence
    assert divergence is not None
    assert (divergence.cycle, divergence.step, divergence.subject) == (4, 3, "SimilarityAssessed")
    assert "advisory" in divergence.fields and "level" in divergence.fields
    assert divergence.describe() == (
        "cycle 4, step 3: similarity 0.74 > 0.7 (diversity.moderate_threshold) and <= 0.8 "
        "(high) gives the moderate advisory where the recorded run had no advisory; "
        "cycle 5's prompt changes, so the recorded answers do not apply from here"
    )
    assert report.changes == {"diversity.moderate_threshold": (0.75, 0.7)}
    assert divergence.recorded is not None and divergence.recorded.level == "none"
    assert divergence.expected is not None and divergence.expected.level == "moderate"


def test_a_change_that_changes_nothing_says_so() -> None:
    events = recorded()
    report = run(events, "diversity.moderate_threshold=0.745", "diversity.high_threshold=0.9")
    assert report.divergence is None
    assert not report.changes_anything
    assert report.decisions == sum(1 for e in events if "." not in e.event_id)
    assert report.describe().startswith(f"nothing changes: {report.decisions} decisions re-driven")


def test_a_setting_already_as_recorded_changes_nothing() -> None:
    report = run(recorded(), "diversity.moderate_threshold=0.75")
    assert report.divergence is None and report.changes == {}
    assert "already has these settings" in report.describe()


def test_a_lower_step_cap_stops_the_tool_calls_at_it() -> None:
    report = run(recorded(), "max_steps_per_cycle=2")
    divergence = report.divergence
    assert divergence is not None
    assert (divergence.cycle, divergence.step) == (1, 2)
    assert divergence.subject == "StepLimitReached"
    assert divergence.recorded is not None and divergence.recorded.type == "ToolCallRequested"
    assert "reaches max_steps_per_cycle 2: the model gets one more call, without tools" in (
        divergence.cause
    )


def test_a_higher_step_cap_lets_the_recorded_cut_calls_run() -> None:
    report = run(recorded(max_steps_per_cycle=2), "max_steps_per_cycle=3")
    divergence = report.divergence
    assert divergence is not None and (divergence.cycle, divergence.step) == (1, 2)
    assert divergence.subject == "ToolCallRequested"
    assert "step 2 is under max_steps_per_cycle 3" in divergence.cause


def test_no_final_call_at_the_cap_ends_the_cycle_on_the_cut_answer() -> None:
    report = run(recorded(max_steps_per_cycle=2), "final_call_at_step_cap=false")
    divergence = report.divergence
    assert divergence is not None and divergence.subject == "StepLimitReached"
    assert divergence.fields == ("final_call",)
    assert "the cycle ends on the cut answer" in divergence.cause


def test_fewer_cycles_end_the_run_early_and_more_have_nothing_recorded() -> None:
    fewer = run(recorded(), "cycle_count=3").divergence
    assert fewer is not None and fewer.subject == "RunCompleted" and fewer.cycle == 3
    assert "ends after cycle 3" in fewer.cause
    more = run(recorded(), "cycle_count=6").divergence
    assert more is not None and more.subject == "CycleStarted"
    assert "go on to cycle 6, which the recorded run never had" in more.cause


def test_switching_diversity_off_ends_each_cycle_without_an_assessment() -> None:
    divergence = run(recorded(), "diversity.enabled=false").divergence
    assert divergence is not None and divergence.cycle == 1
    assert divergence.subject == "CycleEnded"
    assert divergence.recorded is not None and divergence.recorded.type == "EmbeddingRequested"


def test_a_lower_size_limit_refuses_a_recorded_write() -> None:
    divergence = run(recorded(), "limits.memory_value_chars=3").divergence
    assert divergence is not None and (divergence.cycle, divergence.step) == (1, 1)
    assert divergence.subject == "ToolCallCompleted"
    assert divergence.expected is not None and divergence.expected.ok is False
    assert "write is refused by the limits now" in divergence.cause


def test_a_lower_output_cap_changes_the_next_prompt_so_its_answer_does_not_apply() -> None:
    """The write's output, "Stored plan.", reaches call 2 cut at 3 characters."""
    divergence = run(recorded(), "limits.tool_output_chars=3").divergence
    assert divergence is not None and divergence.subject == "LLMRequested"
    assert (divergence.cycle, divergence.step, divergence.fields) == (1, 2, ("prompt_sha256",))
    assert divergence.cause.startswith("the prompt of call 2 differs (prompt_sha256 ")
    assert divergence.cause.endswith("so the recorded answers do not apply from here")


def operator_run(mode: str) -> list[Event]:
    """Cycle 1 sends a message to the operator; ``human``: a person answers it."""
    config = make_config(cycle_count=2, operator={"mode": mode, "auto_reply": "noted"})
    sim = Sim(config)
    replies = [say("", ("send_message_to_operator", {"message": "hello"})), say("done")]
    sim.drive(replies)
    if mode == "human":
        head = sim.state.waiting_for
        assert head is not None
        sim.send("OperatorReplied", task_id=head.task_id, text="hi there", by="operator")
        sim.drive(replies[1:])
    assert sim.state.status == "completed"
    return sim.log


def test_a_human_operator_waits_where_the_policy_replied() -> None:
    divergence = run(operator_run("auto"), "operator.mode=human").divergence
    assert divergence is not None and divergence.expected is None
    assert divergence.kind == "what_if_waits" and divergence.fields == ()
    assert divergence.recorded is not None and divergence.recorded.type == "OperatorReplied"
    assert divergence.describe() == (
        "cycle 1, step 1: operator.mode human: the run waits for a person where the "
        "recorded run answered by policy; recorded operator replies are not reused past here"
    )


def test_the_policy_replies_where_a_person_did_and_that_reply_is_not_reused() -> None:
    events = operator_run("human")
    report = run(events, "operator={mode: auto, auto_reply: noted}")
    divergence = report.divergence
    assert divergence is not None and divergence.subject == "OperatorReplied"
    assert divergence.kind == "recorded_waited"
    assert divergence.expected is not None and divergence.expected.by == "policy"
    assert divergence.recorded is not None and divergence.recorded.by == "operator"
    assert "(who replied 'hi there')" in divergence.cause
    assert "recorded operator replies are not reused past here" in divergence.cause
    person = next(i for i, e in enumerate(events) if getattr(e, "by", None) == "operator")
    assert report.decisions == sum(1 for e in events[:person] if "." not in e.event_id)


def test_another_policy_reply_changes_the_next_prompt() -> None:
    divergence = run(operator_run("auto"), "operator.auto_reply=thanks").divergence
    assert divergence is not None and divergence.fields == ("text",)
    assert "'thanks' (operator.auto_reply) where the recorded one was 'noted'" in (divergence.cause)
    unused = run(operator_run("human"), "operator.auto_reply=thanks")
    assert unused.divergence is None  # a person answered: the policy reply was never used


def test_fewer_paragraph_attempts_change_the_check_task() -> None:
    text = "A paragraph long enough to be checked for repetition by the guard here."
    config = make_config(cycle_count=2, diversity={"enabled": True, "mode": "regenerate"})
    sim = Sim(config)
    sim.drive([say(text)])
    divergence = run(sim.log, "diversity.max_attempts=2").divergence
    assert divergence is not None and divergence.subject == "task run-1/c1/paragraphs/a1"
    assert divergence.kind == "task" and divergence.fields == ("attempts_remaining",)
    assert "attempts_remaining 1 (recorded 4)" in divergence.cause


def test_the_feedback_placement_changes_the_prompt_of_the_answer_asked_again() -> None:
    text = "A paragraph long enough to be checked for repetition by the guard here."
    config = make_config(cycle_count=2, diversity={"enabled": True, "mode": "regenerate"})
    sim = Sim(config)
    sim.drive([say(text)])  # cycle 2 repeats cycle 1: asked again
    divergence = run(sim.log, "diversity.feedback_placement=after_newest").divergence
    assert divergence is not None and divergence.subject == "RegenerationRequested"
    assert (divergence.cycle, divergence.fields) == (2, ("pinned",))
    assert "the regeneration feedback would stand after the newest message" in divergence.cause


def test_refused_keys_are_named_with_the_reason_in_one_line() -> None:
    pairs = ["model_name=other", "deadlines.llm_s=5", "diversity.paragraph_threshold=0.5"]
    with pytest.raises(ConfigError) as caught:
        run(recorded(), *pairs)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("--what-if: model_name is refused: it changes who answers")
    assert "deadlines.llm_s is refused: a deadline" in message
    assert "diversity.paragraph_threshold is refused: the embedder applies it" in message
    assert message.endswith("(`contreact replay --help` lists what a what-if may change)")


def test_a_section_is_judged_by_the_settings_it_changes() -> None:
    with pytest.raises(ConfigError, match=r"diversity.embedding_model is refused"):
        run(recorded(), "diversity={enabled: true, embedding_model: other}")


@pytest.mark.parametrize(
    ("pair", "says"),
    [
        ("diversity.moderat_threshold=0.7", "is not a run setting; did you mean"),
        ("diversity.moderate_threshold", "expected key=value"),
        ("diversity.moderate_threshold=[0.7", "the value is not valid YAML"),
        ("diversity.moderate_threshold=high", "should be a valid number"),
        ("diversity.moderate_threshold=0.9", "must not exceed diversity.high_threshold"),
    ],
)
def test_a_bad_key_or_value_is_one_line(pair: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        run(recorded(), pair)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_every_setting_is_allowed_or_refused_with_a_reason() -> None:
    paths = setting_paths()
    leaves = [p for p in paths if not any(q.startswith(f"{p}.") for q in paths)]
    for leaf in leaves:
        reason = refusal(leaf)
        if leaf in ALLOWED:
            assert reason is None, leaf
        else:
            assert reason is not None and reason != "decide does not read it", leaf
    assert set(ALLOWED) <= set(leaves)
    assert all(key in paths for key in REFUSED)


def test_a_log_that_does_not_replay_is_refused_naming_replay_check() -> None:
    events = recorded()
    index = next(i for i, e in enumerate(events) if e.type == "CycleEnded")
    tampered = [*events[:index], *events[index + 1 :]]
    with pytest.raises(NotReplayable, match=r"does not replay under this code .*--check"):
        run(tampered, "cycle_count=3")
    with pytest.raises(NotReplayable, match="empty log"):
        what_if([], ())
    with pytest.raises(NotReplayable, match="not RunRequested"):
        run(events[1:], "cycle_count=3")


def test_the_json_report_has_the_change_the_place_and_both_events() -> None:
    report = run(recorded(), "diversity.moderate_threshold=0.70").as_json()
    assert set(report) == {
        "run_id",
        "what_if",
        "changes",
        "events",
        "decisions",
        "changes_anything",
        "summary",
        "divergence",
    }
    assert report["what_if"] == ["diversity.moderate_threshold=0.7"]
    assert report["changes"] == {"diversity.moderate_threshold": {"recorded": 0.75, "what_if": 0.7}}
    divergence = report["divergence"]
    assert set(divergence) == {
        "index",
        "cycle",
        "step",
        "subject",
        "kind",
        "differing_fields",
        "cause",
        "summary",
        "expected",
        "recorded",
    }
    assert divergence["kind"] == "event"
    assert divergence["expected"]["level"] == "moderate"
    assert divergence["recorded"]["level"] == "none"
    assert divergence["summary"] == report["summary"]


SAVED = sorted((Path(__file__).resolve().parent.parent / "fixtures").glob("runlog-v*.jsonl"))


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_a_saved_log_of_every_version_takes_a_what_if(path: Path) -> None:
    """Old logs too (no prompt hashes recorded: the what-if compares the prompts by
    the hashes both re-drives compute): a run that failed or was cancelled is not
    changed by a higher cycle count,
    one cycle more goes on where a completed run ended; another policy reply changes
    a run that had one."""
    events = [
        event_from_json(line, where=f"{path.name}:{n}")
        for n, line in enumerate(path.read_bytes().splitlines(), 1)
    ]
    first = events[0]
    assert isinstance(first, RunRequested)
    count = requested_config(events).cycle_count  # a fork's own (RunForked), else the run's
    set_mid_run = any(isinstance(e, SettingsChanged) and "cycle_count" in e.changes for e in events)
    if set_mid_run:  # the logged change would hold from there: refused by name
        with pytest.raises(ConfigError, match="cycle_count was changed while the run ran"):
            run(events, f"cycle_count={count + 1}")
        return
    later = run(events, f"cycle_count={count + 1}")
    state = fold_all(events)
    if state.status == "completed":
        # with the memory block, a cycle starts with its memories' retrieval
        block = state.config is not None and state.config.cognition.memory_block
        first_new = "MemoriesRetrievalRequested" if block else "CycleStarted"
        assert later.divergence is not None and later.divergence.subject == first_new
    else:
        assert later.divergence is None, later.describe()
    reply = run(events, "operator.auto_reply=a reply nobody asked for").divergence
    if any(getattr(e, "by", None) in ("policy", "timeout") for e in events):
        assert reply is not None and reply.subject == "OperatorReplied"
    else:
        assert reply is None


def test_switching_diversity_on_embeds_what_the_recorded_run_did_not() -> None:
    sim = Sim(make_config(cycle_count=2))  # diversity off
    sim.drive([say("a reflection")])
    divergence = run(sim.log, "diversity.enabled=true").divergence
    assert divergence is not None and divergence.subject == "EmbeddingRequested"
    assert divergence.cause.startswith("diversity.enabled: the reflection of cycle 1 would")


def test_the_paragraph_guard_checks_only_answers_with_paragraphs_to_check() -> None:
    short = run(recorded(), "diversity.mode=regenerate")
    assert short.divergence is None  # "a reflection" is under paragraph_min_length
    long_text = "A reflection long enough to make one paragraph for the repetition guard."
    sim = Sim(make_config(cycle_count=2, diversity={"enabled": True}))
    sim.drive([say(long_text)])
    divergence = run(sim.log, "diversity.mode=regenerate").divergence
    assert divergence is not None and divergence.subject == "ParagraphCheckRequested"
    assert "diversity.mode regenerate" in divergence.cause


def test_a_change_only_to_the_history_after_the_last_call_is_not_nothing() -> None:
    """Issue 28, defect 6 (review finding 9): one step a cycle, no final call at the cap,
    and the only answer writes 3,000 characters: a lower value cap changes no derived
    event, but the conversation the run ends with (the argument's cut) does, and with it
    the export and an evaluator's input. The report says so, not "nothing changes"."""
    sim = Sim(make_config(cycle_count=1, max_steps_per_cycle=1, final_call_at_step_cap=False))
    sim.drive([say("", ("write", {"key": "k", "value": "x" * 3000}))])
    assert sim.state.status == "completed"
    report = run(sim.log, "limits.memory_value_chars=100")
    assert report.changes_anything, report.describe()
    divergence = report.divergence
    assert divergence is not None and divergence.kind == "history"
    assert "conversation the run ends with" in divergence.cause
    assert "nothing changes" not in report.describe()
    assert run(sim.log, "limits.memory_value_chars=20000").divergence is None
