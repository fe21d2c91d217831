"""Forks in the pure core: the cut after CycleEnded(K), the re-keyed prefix, RunForked,
the memory seed, the new model's check and cycle K+1 with the advisory cycle K earned;
the fork's log folds and replays; what cannot be honest is refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog import EVENT_ADAPTER, Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.catalog.cycle import CycleEnded, CycleStarted, LLMRequested
from contreact_events.catalog.fork import MemorySeeded, RunForked
from contreact_events.catalog.run import RunStarted
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.config.overrides import parse_assignments
from contreact_events.core.decide import decide
from contreact_events.core.fold import fold_all
from contreact_events.diversity.corpus import accepted_chunks
from contreact_events.exceptions import ForkRefused
from contreact_events.history.export import export_records
from contreact_events.history.fork import check_fork, cut_at_cycle, plan_fork, rekey, state_under
from contreact_events.history.memory_calls import memory_calls
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import (
    event_from_fields,
    event_from_json,
    event_to_fields,
    event_to_json,
)
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import T0, Sim, make_config, say

SAME = "I keep a plan in memory and think about what to keep."
LOGS = sorted((Path(__file__).resolve().parent.parent / "fixtures").glob("runlog-v*.jsonl"))


def load_log(path: Path) -> list[Event]:
    return [event_from_json(line) for line in path.read_bytes().splitlines()]


def script(task: LLMTask) -> AssistantMessage:
    """Cycle 2 writes a key, cycle 4 reads it; every reflection is the same text (so
    each cycle from the second earns the high-similarity advisory)."""
    if task.step == 1 and task.cycle == 2:
        return say("", ("write", {"key": "plan", "value": "written in cycle 2"}))
    if task.step == 1 and task.cycle == 4:
        return say("", ("read", {"key": "plan"}))
    return say(SAME)


def parent_run(run_id: str = "parent", **overrides: object) -> Sim:
    settings: dict[str, object] = {"diversity": {"enabled": True, "embedding_model": "toy"}}
    config = make_config(run_id=run_id, cycle_count=6, **{**settings, **overrides})
    sim = Sim(config)
    sim.drive([script])
    assert sim.state.status == "completed"
    return sim


def roundtrip(events: list[Event]) -> list[Event]:
    return [event_from_fields(event_to_fields(e)) for e in events]


def test_a_fork_at_cycle_3_goes_on_with_the_parents_memory_and_advisory() -> None:
    parent = parent_run()
    child = ForkSim(parent.log, "child", 3, model="other-model")
    assert child.tasks[0].task_id == "child/fork/c3/seed"
    child.drive([script])
    state = child.state
    assert state.status == "completed" and state.cycle_number == 6
    # Cycle 4 read the key cycle 2 wrote (in the parent's memory, copied by the seed).
    read = [e for e in child.log if isinstance(e, ToolCallCompleted) and e.tool_name == "read"]
    assert [r.output for r in read] == ["written in cycle 2"]
    assert read[0].task_id == "child/c4/s1/t0"
    # Cycle 4 opens with the advisory the parent's cycle 3 earned.
    started = {e.cycle: e for e in child.log if isinstance(e, CycleStarted)}
    parents = {e.cycle: e for e in parent.log if isinstance(e, CycleStarted)}
    assert started[4].advisory is not None
    assert started[4].advisory == parents[4].advisory
    # The new model answers from cycle 4: its RunStarted names it.
    run_started = [e for e in child.log if isinstance(e, RunStarted)]
    assert [e.model for e in run_started] == ["test-model", "other-model"]
    forked = next(e for e in child.log if isinstance(e, RunForked))
    assert forked.changes == {"model_name": ("test-model", "other-model")}
    assert forked.parent_digest == fold_all(cut_at_cycle(parent.log, 3)).digest()
    assert forked.memory_calls == 1
    assert any(isinstance(e, MemorySeeded) for e in child.log)


def test_the_forks_log_folds_replays_and_exports() -> None:
    parent = parent_run()
    child = ForkSim(parent.log, "child", 3, model="other-model")
    child.drive([script])
    log = roundtrip(child.log)
    assert fold_all(log) == child.state
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.state == child.state
    records = export_records(log)
    assert records and all(r["run_id"] == "child" for r in records)


def test_the_prefix_is_rekeyed_and_the_parent_is_unchanged() -> None:
    parent = parent_run()
    before = list(parent.log)
    child = ForkSim(parent.log, "child", 3)
    assert parent.log == before
    prefix = child.plan.prefix
    assert isinstance(prefix[-1], CycleEnded) and prefix[-1].cycle == 3
    for event in prefix:
        assert event.run_id == event.correlation_id == "child"
        assert "parent" not in (event.causation_id or "")
        assert "parent" not in str(getattr(event, "task_id", ""))
    assert [e.event_id for e in prefix] == [e.event_id for e in before[: len(prefix)]]
    assert fold_all(prefix).digest() != fold_all(before[: len(prefix)]).digest()
    # The fold of the prefix is the parent's state under the child's name.
    parent_state = fold_all(before[: len(prefix)])
    child_state = fold_all(prefix)
    assert child_state.message_history == parent_state.message_history
    assert child_state.embeddings == parent_state.embeddings
    assert child_state.next_advisory == parent_state.next_advisory


def test_a_decision_cut_by_the_fork_is_compared_up_to_the_cut() -> None:
    """The parent logged CycleEnded(3) and CycleStarted(4)... in one decision: the
    prefix keeps only what comes up to the cut, and replay accepts it."""
    parent = parent_run()
    ended = next(i for i, e in enumerate(parent.log) if isinstance(e, CycleEnded) and e.cycle == 3)
    assert isinstance(parent.log[ended + 1], CycleStarted)  # same decision, not copied
    child = ForkSim(parent.log, "child", 3)
    assert len(child.plan.prefix) == ended + 1


def test_a_fork_of_a_fork() -> None:
    parent = parent_run()
    child = ForkSim(parent.log, "child", 3, model="other-model")
    child.drive([script])
    grandchild = ForkSim(child.log, "grandchild", 5, model="third-model")
    grandchild.drive([script])
    assert grandchild.state.status == "completed"
    assert grandchild.plan.forked.changes == {"model_name": ("other-model", "third-model")}
    # The seed replays the whole chain's memory calls: the write of cycle 2, the read of 4.
    assert grandchild.plan.forked.memory_calls == 2
    log = roundtrip(grandchild.log)
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()
    tasks = [e.task_id for e in log if isinstance(e, MemorySeeded)]
    assert tasks == ["grandchild/fork/c3/seed", "grandchild/fork/c5/seed"]
    models = [e.model for e in log if isinstance(e, RunStarted)]
    assert models == ["test-model", "other-model", "third-model"]


def test_a_fork_with_no_memory_calls_checks_the_model_at_once() -> None:
    config = make_config(run_id="quiet", cycle_count=3)
    parent = Sim(config)
    parent.drive([say("a reflection")])
    child = ForkSim(parent.log, "quiet-2", 1, settings=["max_steps_per_cycle=3"])
    task = child.task()
    assert isinstance(task, LLMTask) and task.kind == "check"
    assert task.task_id == "quiet-2/fork/c1/check"
    child.drive([say("a reflection")])
    assert child.state.status == "completed"
    assert child.state.config is not None and child.state.config.max_steps_per_cycle == 3
    assert child.plan.forked.changes == {"max_steps_per_cycle": (25, 3)}


@pytest.mark.parametrize(
    ("at_cycle", "settings", "child", "words"),
    [
        (6, [], "child", "cycle_count above 6"),
        (3, ["cycle_count=3"], "child", "cycle_count above 3"),
        (0, [], "child", "--at-cycle 0"),
        (3, ["diversity.embedding_model=other"], "child", "embedding_model"),
        (3, ["cycle_count=x"], "child", "cycle_count"),
        (3, [], "parent", "run id of its own"),
        (3, ["run_id=other"], "child", "given with --run-id"),
        (3, [], "c" * 200, "the fork's run id must be"),
    ],
)
def test_what_cannot_be_honest_is_refused_with_one_line(
    at_cycle: int, settings: list[str], child: str, words: str
) -> None:
    parent = parent_run()
    with pytest.raises(ForkRefused) as refused:
        plan_fork(
            parent.log,
            child_run_id=child,
            at_cycle=at_cycle,
            assignments=parse_assignments(settings),
            ts=T0,
        )
    assert words in str(refused.value) and "\n" not in str(refused.value)


def experiment_scope_parent() -> Sim:
    return parent_run(
        experiment="exp",
        diversity={
            "enabled": True,
            "embedding_model": "toy",
            "mode": "regenerate",
            "corpus_scope": "experiment",
        },
    )


def test_a_shared_experiment_corpus_is_refused() -> None:
    parent = experiment_scope_parent()
    with pytest.raises(ForkRefused, match="join the experiment corpus experiment:exp") as refused:
        plan_fork(parent.log, child_run_id="child", at_cycle=2, ts=T0)
    assert "diversity.corpus_scope=run" in str(refused.value)
    assert "experiment=OTHER" in str(refused.value)
    own = parse_assignments(["diversity.corpus_scope=run"])
    plan = plan_fork(parent.log, child_run_id="child", at_cycle=2, ts=T0, assignments=own)
    assert plan.forked.changes == {"diversity.corpus_scope": ("experiment", "run")}


def corpus(runs: list[list[Event]], scope: str) -> list[str]:
    """The texts of a scope's corpus: every chunk of the member runs in that scope, as the
    embedder's index takes them (``accepted_chunks``, by scope)."""
    return sorted(c.text for events in runs for c in accepted_chunks(events) if c.scope == scope)


@pytest.mark.parametrize(
    ("settings", "child_scope"),
    [(["diversity.corpus_scope=run"], "run:child"), (["experiment=other"], "experiment:other")],
)
def test_a_fork_of_an_experiment_corpus_as_the_refusal_says_counts_each_paragraph_once(
    settings: list[str], child_scope: str
) -> None:
    """Issue 28, defect 4: forked the way the refusal says, the child's copied paragraphs
    leave the parent's experiment corpus alone (no paragraph twice in it) and make the
    child's own corpus at K: the parent's paragraphs up to K."""
    parent = experiment_scope_parent()
    up_to_2 = cut_at_cycle(parent.log, 2)
    assert corpus([up_to_2], "experiment:exp")  # the parent's paragraphs up to cycle 2
    plan = plan_fork(
        parent.log,
        child_run_id="child",
        at_cycle=2,
        ts=T0,
        assignments=parse_assignments(settings),
    )
    prefix = list(plan.prefix)
    assert corpus([parent.log, prefix], "experiment:exp") == corpus([parent.log], "experiment:exp")
    assert corpus([prefix], child_scope) == corpus([up_to_2], "experiment:exp")
    assert {c.scope for c in accepted_chunks(prefix)} == {child_scope}
    child = ForkSim(parent.log, "child", 2, settings=settings)
    child.drive([script])
    assert child.state.status == "completed"
    assert replay_check(child.log).ok


def test_a_parent_that_has_not_reached_the_cycle_is_refused() -> None:
    parent = parent_run()
    ended = next(i for i, e in enumerate(parent.log) if isinstance(e, CycleEnded) and e.cycle == 3)
    with pytest.raises(ForkRefused, match=r"has not reached the end of cycle 3.*cycle is 2"):
        plan_fork(parent.log[:ended], child_run_id="child", at_cycle=3, ts=T0)


def test_run_forked_is_accepted_only_right_after_a_copied_prefix() -> None:
    parent = parent_run()
    plan = plan_fork(parent.log, child_run_id="child", at_cycle=3, ts=T0)
    finished = fold_all(rekey(parent.log, "parent", "child"))
    assert decide(finished, plan.forked).ignored is not None
    shorter = fold_all(plan.prefix[:-1])
    assert decide(shorter, plan.forked).ignored is not None
    assert decide(plan.state, plan.forked).accepted


def test_memory_calls_of_the_prefix_are_the_parents_rekeyed() -> None:
    parent = parent_run()
    plan = plan_fork(parent.log, child_run_id="child", at_cycle=3, ts=T0)
    calls = memory_calls(plan.prefix)
    parents = memory_calls(cut_at_cycle(parent.log, 3))
    assert [c.task.task_id for c in calls] == ["child/c2/s1/t0"]
    assert [(c.task.arguments, c.task.ts) for c in calls] == [
        (c.task.arguments, c.task.ts) for c in parents
    ]
    assert not any(isinstance(e, LLMRequested) and e.cycle > 3 for e in plan.prefix)


def test_the_run_scope_paragraph_corpus_comes_with_the_prefix() -> None:
    """Regenerate mode: the fork's first paragraph check (cycle 4) is made against the
    corpus the parent had built by the end of cycle 3, under the fork's own scope."""
    guard = {
        "enabled": True,
        "embedding_model": "toy",
        "mode": "regenerate",
        "paragraph_min_length": 10,
    }
    parent = parent_run(diversity=guard)
    child = ForkSim(parent.log, "child", 3, model="other-model")
    child.drive([script])
    assert child.state.status == "completed"
    checked = [e for e in child.log if e.type == "ParagraphsChecked"]
    parents = [e for e in parent.log if e.type == "ParagraphsChecked"]
    first_own = next(e for e in checked if e.cycle == 4)
    parents_first = next(e for e in parents if e.cycle == 4)
    assert first_own.corpus_chunks == parents_first.corpus_chunks > 0
    requested = [e for e in child.log if e.type == "ParagraphCheckRequested"]
    assert {e.scope for e in requested} == {"run:child"}
    assert replay_check(roundtrip(child.log)).ok


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("", "names no model"),
        ("  ", "names no model"),
        ("llama3\nRunFailed", "no control characters"),
        ("llama3\x1b[31m", "no control characters"),
    ],
)
def test_a_model_name_that_names_nothing_or_carries_control_characters_is_refused(
    model: str, words: str
) -> None:
    """Issue 28, defect 19: ``--model ''`` is refused, not ignored; a newline or an ESC in
    a model name is refused (it would travel into logs, prompts and terminals)."""
    parent = parent_run()
    with pytest.raises(ForkRefused) as refused:
        check_fork(parent.log, child_run_id="child", at_cycle=3, model=model)
    text = str(refused.value)
    assert words in text and "\n" not in text and "\x1b" not in text


def test_a_too_long_fork_id_is_named_as_the_forks_not_as_a_set() -> None:
    parent = parent_run()
    with pytest.raises(ForkRefused) as refused:
        check_fork(parent.log, child_run_id="c" * 200, at_cycle=3)
    assert "--set" not in str(refused.value) and "--run-id" in str(refused.value)


def cut_states(events: list[Event]) -> list[tuple[int, list[Event]]]:
    cycles = [e.cycle for e in events if isinstance(e, CycleEnded)]
    return [(k, cut_at_cycle(events, k)) for k in cycles]


def analysed_parent() -> Sim:
    """Exchanges with the operator whose model analyses stay open over cycle ends (the
    driver never answers them): a cut then holds open tasks, whose ids are re-keyed."""

    def talk(task: LLMTask) -> AssistantMessage:
        if task.step == 1:
            return say("", ("send_message_to_operator", {"message": f"hello {task.cycle}"}))
        return script(task)

    config = make_config(
        run_id="parent", cycle_count=4, operator={"mode": "auto"}, cognition={"analysis": "model"}
    )
    sim = Sim(config)
    sim.drive([talk])
    assert sim.state.open_tasks
    return sim


@pytest.mark.parametrize(
    "source", [*LOGS, "scripted", "analysed"], ids=lambda p: getattr(p, "name", p)
)
def test_the_parents_digest_comes_from_the_one_fold_of_the_copy(source: object) -> None:
    """``plan_fork`` folds the re-keyed prefix once and takes the parent's digest at K from
    that state under the parent's ids again (``state_under``): at every ended cycle of
    every saved log, a scripted run and one with open analyses, it is the digest of the
    parent's own fold."""
    if source == "scripted":
        events = parent_run().log
    elif source == "analysed":
        events = analysed_parent().log
    else:
        assert isinstance(source, Path)
        events = load_log(source)
    parent = events[0].run_id
    cuts = cut_states(events)
    assert cuts or source not in ("scripted", "analysed")
    for cycle, cut in cuts:
        mine = fold_all(rekey(cut, parent, "child"))
        theirs = fold_all(cut)
        back = state_under(mine, "child", parent)
        assert back == theirs and back.digest() == theirs.digest(), f"cycle {cycle}"
        assert state_under(theirs, parent, "child").digest() == mine.digest(), f"cycle {cycle}"
    if source == "analysed":
        assert any(fold_all(cut).open_tasks for _, cut in cuts)


def reference_rekey(events: list[Event], parent: str, child: str, scope: str) -> list[Event]:
    """``rekey`` the careful way: each event dumped, its ids edited, validated again."""
    old, new = f"{parent}/", f"{child}/"

    def edit(data: dict[str, Any]) -> None:
        for name in ("task_id", "causation_id", "matched_id", "exchange_task_id"):
            value = data.get(name)
            if isinstance(value, str) and value.startswith(old):
                data[name] = new + value[len(old) :]
        for match in data.get("matches") or ():
            edit(match)

    out = []
    for event in events:
        data = event.model_dump()
        data["run_id"] = data["correlation_id"] = child
        edit(data)
        if "scope" in data:
            data["scope"] = scope
        if isinstance(data.get("config"), dict):
            data["config"]["run_id"] = child
        out.append(EVENT_ADAPTER.validate_python(data))
    return out


@pytest.mark.parametrize("source", [*LOGS, "regenerate"], ids=lambda p: getattr(p, "name", p))
def test_the_fast_rekey_makes_what_a_dump_and_validation_make(source: object) -> None:
    if source == "regenerate":
        guard = {"enabled": True, "embedding_model": "toy", "mode": "regenerate"}
        events = parent_run(diversity={**guard, "paragraph_min_length": 10}).log
        assert any(getattr(e, "matches", ()) for e in events)
    else:
        assert isinstance(source, Path)
        events = load_log(source)
    parent = events[0].run_id
    before = [event_to_json(e) for e in events]
    fast = rekey(events, parent, "child", scope="experiment:x")
    careful = reference_rekey(events, parent, "child", "experiment:x")
    assert fast == careful
    assert [event_to_json(e) for e in fast] == [event_to_json(e) for e in careful]
    assert [event_to_json(e) for e in events] == before  # the parent's are left alone
