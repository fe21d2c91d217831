"""Saved logs of every released schema version must keep decoding, folding,
replaying and exporting: recorded runs outlive the code that made them."""

from __future__ import annotations

from pathlib import Path

import pytest

from contreact_events.catalog import EVENT_CLASSES, SCHEMA_VERSIONS
from contreact_events.core.fold import fold_all
from contreact_events.diversity.memory_projection import MemoryProjection
from contreact_events.history.export import export_records
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import event_from_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


def load(path: Path) -> list:  # type: ignore[type-arg]
    lines = path.read_bytes().splitlines()
    return [event_from_json(line, where=f"{path.name}:{n}") for n, line in enumerate(lines, 1)]


def test_the_saved_logs_cover_every_event_type() -> None:
    seen = {event.type for path in LOGS for event in load(path)}
    assert seen == set(EVENT_CLASSES)


def test_every_saved_log_has_a_run_id_of_its_own() -> None:
    """Tests load them all as one archive (the dashboard's fixtures): two logs of one
    run id would be one run there, the other's events silently left out."""
    ids = [event_from_json(p.read_bytes().splitlines()[0]).run_id for p in LOGS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_saved_log_folds_replays_and_exports(path: Path) -> None:
    events = load(path)
    state = fold_all(events)
    assert state.terminal
    report = replay_check(events)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.state == state
    records = list(export_records(events))
    assert sum(r["event_type"] == "CYCLE_START" for r in records) == state.cycle_number


def test_version_1_runs_are_read_as_runs_without_the_diversity_check() -> None:
    events = load(FIXTURES / "runlog-v1-completed.jsonl")
    assert events[0].schema_version == SCHEMA_VERSIONS["RunRequested"]  # upcast on read
    state = fold_all(events)
    assert state.config is not None and state.config.diversity.enabled is False
    raw = (FIXTURES / "runlog-v1-completed.jsonl").read_text().splitlines()[0]
    assert '"schema_version":1' in raw and "diversity" not in raw  # the file is untouched


def test_version_2_runs_are_read_as_runs_without_caps_or_final_call() -> None:
    events = load(FIXTURES / "runlog-v2-regenerate.jsonl")
    state = fold_all(events)
    assert state.config is not None
    assert state.config.final_call_at_step_cap is False
    assert state.config.limits.memory_value_chars is None
    assert state.config.diversity.feedback_placement == "after_newest"
    regen = next(e for e in events if e.type == "RegenerationRequested")
    assert regen.pinned is False
    assert all(e.prompt_sha256 is None for e in events if e.type == "LLMRequested")


def test_version_3_logs_record_the_prompt_hashes() -> None:
    events = load(FIXTURES / "runlog-v3-caps-final-call.jsonl")
    assert all(e.prompt_sha256 for e in events if e.type == "LLMRequested")
    started = next(e for e in events if e.type == "RunStarted")
    assert "system_prompt_with_tools" in started.prompt_hashes
    assert any(e.type == "StepLimitReached" and e.final_call for e in events)


def test_version_3_runs_sent_arguments_over_their_cap_back_whole() -> None:
    events = load(FIXTURES / "runlog-v3-caps-final-call.jsonl")
    state = fold_all(events)
    assert state.config is not None and state.config.limits.cut_arguments_in_history is False
    cap = state.config.limits.memory_value_chars or 0
    writes = [c for m in state.message_history for c in m.tool_calls if c.name == "write"]
    assert any(len(w.arguments["value"]) > cap for w in writes)  # whole, as it was sent


def test_version_4_logs_keep_arguments_over_their_cap_cut_in_the_history() -> None:
    events = load(FIXTURES / "runlog-v4-argument-cut.jsonl")
    state = fold_all(events)
    assert state.config is not None and state.config.limits.cut_arguments_in_history is True
    kept = [c for m in state.message_history for c in m.tool_calls]
    logged = [c for e in events if e.type == "LLMResponded" for c in e.message.tool_calls]
    assert len(kept) == len(logged) and kept != logged
    assert any("[argument cut:" in str(c.arguments) for c in kept)
    assert not any("[argument cut:" in str(c.arguments) for c in logged)


def test_the_cognition_log_holds_analyses_after_their_cycles_and_the_end_waits() -> None:
    events = load(FIXTURES / "runlog-v4-cognition.jsonl")
    types = [e.type for e in events]
    analysed = [e for e in events if e.type == "OperatorMessageAnalyzed"]
    assert [a.analysis.analyser for a in analysed] == ["model", "heuristic", "heuristic"]
    assert analysed[0].fallback_reason is None
    assert analysed[1].fallback_reason and "(malformed:" in analysed[1].fallback_reason
    assert analysed[2].fallback_reason and "failed 2 time(s)" in analysed[2].fallback_reason
    # cycle 1's analysis came during cycle 3; the run completed only after the last one
    assert types.index("OperatorMessageAnalyzed") > types.index("CycleEnded") + 1
    assert types[-2:] == ["OperatorMessageAnalyzed", "RunCompleted"]
    state = fold_all(events)
    assert state.open_tasks == () and state.analyses == 3


def test_the_memory_policy_log_keeps_an_exchange_and_shows_it_in_the_next_prompt() -> None:
    events = load(FIXTURES / "runlog-v4-memory-policy.jsonl")
    types = [e.type for e in events]
    at = types.index("PersistentMemoryRequested")
    assert types[at - 1 : at + 3] == [
        "OperatorMessageAnalyzed",
        "PersistentMemoryRequested",
        "PersistentMemoryStored",
        "ToolCallCompleted",
    ]
    key = events[at].key
    retrieved = [e for e in events if e.type == "MemoriesRetrieved"]
    assert [[m.key for m in e.memories] for e in retrieved] == [[], [key, "boat"]]
    refused = [e for e in events if e.type == "ToolCallCompleted" and not e.ok]
    assert len(refused) == 1 and "memory policy" in refused[0].output
    state = fold_all(events)
    assert state.config is not None and state.config.cognition.memory_policy
    assert [m.key for m in state.memory_block] == [key, "boat"]
    # search_memory and the block search the kept exchange like any memory
    projection = MemoryProjection()
    projection.feed(events)
    assert projection.values[key] == events[at].value


def test_version_5_reads_an_acknowledgement_as_conversation_and_version_4_as_it_ran() -> None:
    """``cognition.heuristic_rules``: version 5 runs record rules 2 (the default auto reply
    "Acknowledged." is conversation); version 4 runs read with rules 1, as they ran
    (their replay above stays exact: the cognition log's fallback read it as a statement)."""
    new = load(FIXTURES / "runlog-v5-fork-config-in-force.jsonl")
    [analysed] = [e for e in new if e.type == "OperatorMessageAnalyzed"]
    assert analysed.analysis.intent == "conversation"
    state = fold_all(new)
    assert state.config is not None and state.config.cognition.heuristic_rules == 2
    old = load(FIXTURES / "runlog-v4-cognition.jsonl")
    assert fold_all(old).config.cognition.heuristic_rules == 1
    heuristic = [
        e.analysis.intent
        for e in old
        if e.type == "OperatorMessageAnalyzed" and e.analysis.analyser == "heuristic"
    ]
    assert heuristic == ["statement", "statement"]  # the old rules' reading of it, replayed


def test_version_2_forks_follow_their_own_config_and_version_1_forks_replay_as_they_ran() -> None:
    """``RunForked`` 2 records ``config_in_force``: the fork's memory block (off) and its
    diversity check (off) hold from cycle K+1; a version 1 fork reads as one that kept
    cycle K's block and advisory, as it ran."""
    events = load(FIXTURES / "runlog-v5-fork-config-in-force.jsonl")
    forked = next(e for e in events if e.type == "RunForked")
    assert forked.config_in_force and forked.at_cycle == 2
    after = events.index(forked)
    started = [e for e in events[after:] if e.type == "CycleStarted"]
    assert [e.advisory for e in started][:1] == [None]
    assert not any(e.type == "MemoriesRetrievalRequested" for e in events[after:])
    old = next(e for e in load(FIXTURES / "runlog-v4-fork.jsonl") if e.type == "RunForked")
    assert old.config_in_force is False
