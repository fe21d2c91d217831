"""The memory store: the five tools, isolation by run id, exactly-once application,
literal pattern search, and the rebuild from a run log (real SQLite files)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage, ToolCall
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.wire.tasks import MemoryTask
from contreact_memory.exceptions import RebuildTargetExists, StoreUnavailable
from contreact_memory.rebuild import differences, rebuild_store, replay
from contreact_memory.store import MemoryStore, ToolOutcome
from tests.support.sim import make_config, say
from tests.support.store_sim import StoreSim

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
_ids = itertools.count(1)


def task(
    tool: str, run_id: str = "run-a", task_id: str | None = None, **arguments: Any
) -> MemoryTask:
    n = next(_ids)
    return MemoryTask(
        task_id=task_id or f"{run_id}:t{n}",
        run_id=run_id,
        tool=tool,
        arguments=arguments,
        ts=T0 + timedelta(seconds=n),
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(tmp_path / "memory.db")
    yield opened
    opened.close()


def apply(store: MemoryStore, tool: str, run_id: str = "run-a", **arguments: Any) -> ToolOutcome:
    return store.apply(task(tool, run_id, **arguments))


# --- the five tools -------------------------------------------------------------------


def test_write_then_read_returns_the_value(store: MemoryStore) -> None:
    assert apply(store, "write", key="plan", value="explore") == ToolOutcome(
        "Saved under key 'plan'.", True
    )
    assert apply(store, "read", key="plan") == ToolOutcome("explore", True)


def test_write_overwrites_and_says_so(store: MemoryStore) -> None:
    apply(store, "write", key="plan", value="one")
    out = apply(store, "write", key="plan", value="two")
    assert out == ToolOutcome("Saved under key 'plan' (the previous value was replaced).", True)
    assert apply(store, "read", key="plan").output == "two"
    assert len(store.dump()) == 1


def test_read_of_a_missing_key_is_an_error_for_the_model(store: MemoryStore) -> None:
    assert apply(store, "read", key="nope") == ToolOutcome(
        "Error: no memory under key 'nope'. Use list() to see the keys.", False
    )


def test_list_is_sorted_and_says_when_empty(store: MemoryStore) -> None:
    assert apply(store, "list") == ToolOutcome("Memory is empty.", True)
    for key in ("b", "a", "C"):
        apply(store, "write", key=key, value="x")
    assert apply(store, "list") == ToolOutcome("C, a, b", True)


def test_delete_removes_and_a_missing_key_is_an_error(store: MemoryStore) -> None:
    apply(store, "write", key="k", value="v")
    assert apply(store, "delete", key="k") == ToolOutcome("Deleted key 'k'.", True)
    assert apply(store, "read", key="k").ok is False
    assert apply(store, "delete", key="k") == ToolOutcome(
        "Error: no memory under key 'k' to delete. Use list() to see the keys.", False
    )
    assert store.dump() == []


def test_pattern_search_finds_substrings(store: MemoryStore) -> None:
    for key in ("goal_1", "goal_2", "notes", "my_goal"):
        apply(store, "write", key=key, value="x")
    assert apply(store, "pattern_search", pattern="goal") == ToolOutcome(
        "goal_1, goal_2, my_goal", True
    )
    assert apply(store, "pattern_search", pattern="zzz") == ToolOutcome(
        "No keys contain 'zzz'.", True
    )


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (".*", "a.*b"),
        ("%", "100%"),
        ("_", "x_y"),
        ("\\", "back\\slash"),
        ("[a]", "[a]"),
        ("a.", "a.*b"),
        ("^a", "No keys contain '^a'."),
    ],
)
def test_pattern_search_is_literal(store: MemoryStore, pattern: str, expected: str) -> None:
    for key in ("a.*b", "100%", "x_y", "back\\slash", "[a]", "abc", "plain"):
        apply(store, "write", key=key, value="v")
    assert apply(store, "pattern_search", pattern=pattern).output == expected


def test_pattern_search_is_case_sensitive(store: MemoryStore) -> None:
    for key in ("Goal", "goal", "GOAL"):
        apply(store, "write", key=key, value="v")
    assert apply(store, "pattern_search", pattern="goal").output == "goal"
    assert apply(store, "pattern_search", pattern="Goa").output == "Goal"
    assert apply(store, "pattern_search", pattern="É").output == "No keys contain 'É'."


def test_runs_are_isolated(store: MemoryStore) -> None:
    apply(store, "write", "run-a", key="secret", value="from a")
    apply(store, "write", "run-b", key="other", value="from b")
    assert apply(store, "read", "run-b", key="secret").ok is False
    assert apply(store, "list", "run-b").output == "other"
    assert apply(store, "pattern_search", "run-b", pattern="secret").output == (
        "No keys contain 'secret'."
    )
    assert apply(store, "delete", "run-b", key="secret").ok is False
    apply(store, "write", "run-b", key="secret", value="from b")
    assert apply(store, "read", "run-a", key="secret").output == "from a"
    assert apply(store, "read", "run-b", key="secret").output == "from b"


# --- errors for the model -------------------------------------------------------------


# --- the memory policy's reserved prefix (cognition.memory_policy) ----------------------


def policy_task(tool: str, **arguments: Any) -> MemoryTask:
    return task(tool).model_copy(update={"arguments": arguments, "reserved_prefix": "persistent/"})


def test_with_the_policy_the_agent_cannot_write_or_delete_under_the_prefix(
    store: MemoryStore,
) -> None:
    kept = store.apply(policy_task("persist", key="persistent/exchange-1", value="{}"))
    assert kept == ToolOutcome("Kept under key 'persistent/exchange-1'.", True)
    for tool, arguments in (
        ("write", {"key": "persistent/exchange-1", "value": "mine"}),
        ("write", {"key": "persistent/new", "value": "mine"}),
        ("delete", {"key": "persistent/exchange-1"}),
    ):
        outcome = store.apply(policy_task(tool, **arguments))
        assert not outcome.ok
        assert "keys under 'persistent/' are kept by the platform's memory policy" in outcome.output
        assert f"{tool} cannot change them" in outcome.output
    # read, list and pattern_search see the kept key, unchanged
    assert store.apply(policy_task("read", key="persistent/exchange-1")) == ToolOutcome("{}", True)
    store.apply(policy_task("write", key="notes", value="mine"))
    assert store.apply(policy_task("list")).output == "notes, persistent/exchange-1"
    found = store.apply(policy_task("pattern_search", pattern="persistent/"))
    assert found == ToolOutcome("persistent/exchange-1", True)
    assert [row[1:3] for row in store.dump("run-a")] == [
        ("notes", "mine"),
        ("persistent/exchange-1", "{}"),
    ]


def test_persist_stores_only_under_the_prefix(store: MemoryStore) -> None:
    outcome = store.apply(policy_task("persist", key="notes", value="x"))
    assert not outcome.ok and "under a key starting with 'persistent/'" in outcome.output
    assert store.dump("run-a") == []


def test_without_the_policy_a_persistent_key_is_an_ordinary_key(store: MemoryStore) -> None:
    # Runs recorded before the policy (or without it) replay as they ran.
    assert apply(store, "write", key="persistent/mine", value="v").ok
    assert apply(store, "delete", key="persistent/mine").ok


def test_unknown_tool_is_an_error_result(store: MemoryStore) -> None:
    out = apply(store, "format_disk")
    assert out.ok is False
    assert out.output.startswith("Error: unknown tool 'format_disk'.")


def test_the_operator_tool_is_not_a_memory_tool(store: MemoryStore) -> None:
    out = apply(store, "send_message_to_operator", message="hi")
    assert out == ToolOutcome("Error: send_message_to_operator is not a memory tool.", False)


@pytest.mark.parametrize(
    ("tool", "arguments", "fragment"),
    [
        ("write", {"key": "k"}, "missing argument(s) value"),
        ("read", {}, "missing argument(s) key"),
        ("read", {"key": 3}, "argument(s) key must be text"),
        ("list", {"verbose": "yes"}, "unexpected argument(s) verbose"),
        ("write", {"key": "", "value": "v"}, "the key must not be empty"),
        ("write", {"key": "k", "value": "bad \ud800"}, "argument 'value' is not valid Unicode"),
    ],
)
def test_bad_arguments_are_error_results(
    store: MemoryStore, tool: str, arguments: dict[str, Any], fragment: str
) -> None:
    out = apply(store, tool, **arguments)
    assert out.ok is False
    assert out.output.startswith("Error: ")
    assert fragment in out.output
    assert store.dump() == []


# --- exactly once ---------------------------------------------------------------------


def test_a_repeated_task_gets_the_recorded_result_and_is_not_applied_again(
    store: MemoryStore,
) -> None:
    first = task("write", key="k", value="v1")
    assert store.apply(first).ok
    assert apply(store, "delete", key="k").ok
    again = store.apply(first)  # redelivered after the delete
    assert again == ToolOutcome("Saved under key 'k'.", True)
    assert store.dump() == []
    assert apply(store, "read", key="k").ok is False


def test_a_repeated_read_answers_what_it_answered_first(store: MemoryStore) -> None:
    apply(store, "write", key="k", value="old")
    read = task("read", key="k")
    assert store.apply(read).output == "old"
    apply(store, "write", key="k", value="new")
    assert store.apply(read).output == "old"
    assert store.recorded(read.task_id) == ToolOutcome("old", True)


def test_a_repeated_invalid_task_answers_the_same(store: MemoryStore) -> None:
    bad = task("read", key="missing")
    first = store.apply(bad)
    apply(store, "write", key="missing", value="now here")
    assert store.apply(bad) == first
    assert first.ok is False


def test_processed_marks_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = task("write", key="k", value="v")
    one = MemoryStore.open(path)
    one.apply(first)
    one.apply(task("delete", key="k"))
    one.close()
    two = MemoryStore.open(path)
    assert two.apply(first).output == "Saved under key 'k'."
    assert two.dump() == []
    two.close()


# --- storage --------------------------------------------------------------------------


def test_long_and_unicode_values_round_trip(store: MemoryStore) -> None:
    long_value = "".join(chr(0x20 + i % 0x5F) for i in range(100_000))
    texts = {
        "long": long_value,
        "emoji 🧠": "🙂 multi-codepoint 👩‍👩‍👧 and flags 🇫🇷",
        "日本語": "こんにちは、世界\nnew line\ttab ' \" quotes; DROP TABLE agent_memory; --",
        "rtl": "שלום עולם مرحبا",
        "combining": "e\u0301 vs \u00e9, zero width\u200b, nul-free",
    }
    for key, value in texts.items():
        assert apply(store, "write", key=key, value=value).ok
    for key, value in texts.items():
        assert apply(store, "read", key=key) == ToolOutcome(value, True)
    assert len(apply(store, "read", key="long").output) == 100_000


def test_wal_mode_is_on(store: MemoryStore, tmp_path: Path) -> None:
    assert store.journal_mode() == "wal"
    with sqlite3.connect(tmp_path / "memory.db") as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_updated_at_is_the_request_time(store: MemoryStore) -> None:
    write = task("write", key="k", value="v")
    store.apply(write)
    (row,) = store.dump("run-a")
    assert row[3] == write.ts.isoformat(timespec="microseconds")


def test_opening_a_missing_store_without_create_fails(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        MemoryStore.open(tmp_path / "absent.db", create=False)


# --- rebuild --------------------------------------------------------------------------


def live_run(store: MemoryStore, run_id: str) -> list[Event]:
    """What the orchestrator and the memory service do together for one run: every
    way a memory call can end, and a last call whose result the log never got."""
    config = make_config(run_id=run_id, cycle_count=2, operator={"mode": "auto"})
    sim = StoreSim(config, store)
    calls = AssistantMessage(
        tool_calls=(
            ToolCall(name="write", arguments={"key": "goal", "value": "learn"}),
            ToolCall(name="write", arguments={"key": "goal", "value": "learn more"}),
            ToolCall(name="write", arguments={"key": "tmp", "value": "scratch"}),
            ToolCall(name="read", arguments={"key": "nothing"}),  # ok=False, executed
            ToolCall(name="delete", arguments={"key": "tmp"}),
            ToolCall(name="write", arguments={"key": "naïve ✓", "value": "x" * 5000}),
            ToolCall(name="pattern_search", arguments={"pattern": "goal"}),
            # The orchestrator answers these itself: they never reach the service.
            ToolCall(name="write", arguments={"key": "k"}),
            ToolCall(name="write", arguments={}, arguments_error="not JSON"),
            ToolCall(name="write", arguments={"key": "big", "value": "y" * 20_001}),
            ToolCall(name="fly", arguments={"key": "k"}),
            ToolCall(name="send_message_to_operator", arguments={"message": "hi"}),
        )
    )
    sim.start()
    for reply in (calls, say("done"), say("", ("write", {"key": "never", "value": "answered"}))):
        sim.answer_llm(reply)
        while (
            sim.tasks
            and isinstance(sim.tasks[0], MemoryTask)
            and sim.tasks[0].arguments.get("key") != "never"
        ):
            sim.answer_memory()
    assert isinstance(sim.task(), MemoryTask)  # the log ends before its result
    return sim.log


def test_rebuild_equals_the_live_store(tmp_path: Path) -> None:
    live = MemoryStore.open(tmp_path / "live.db")
    logs = [live_run(live, "run-a"), live_run(live, "run-b")]
    refused = [e for e in logs[0] if isinstance(e, ToolCallCompleted) and not e.ok]
    assert any("the limit is 20000" in e.output for e in refused)  # a capped write is in it
    rebuilt = rebuild_store(logs, tmp_path / "rebuilt.db")
    assert rebuilt.dump() == live.dump()
    assert rebuilt.dump("run-b") == live.dump("run-b")
    assert len(live.dump()) == 4
    assert differences(live.dump(), rebuilt.dump()) == []
    rebuilt.close()
    live.close()
    with sqlite3.connect(tmp_path / "live.db") as a, sqlite3.connect(tmp_path / "rebuilt.db") as b:
        sql = "SELECT * FROM agent_memory ORDER BY run_id, key"
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall()


def test_replay_applies_only_what_the_service_executed(tmp_path: Path) -> None:
    """Every replayed result equals the logged one: no call the orchestrator answered
    itself (a capped write among them) is replayed."""
    live = MemoryStore.open(tmp_path / "live.db")
    log = live_run(live, "run-a")
    live.close()
    fresh = MemoryStore.open(tmp_path / "fresh.db")
    assert replay(fresh, log) == []
    assert [row[1] for row in fresh.dump("run-a")] == ["goal", "naïve ✓"]
    fresh.close()


def test_replaying_an_invalid_call_is_harmless(store: MemoryStore) -> None:
    apply(store, "write", key="k", value="v")
    before = store.dump()
    for bad in (task("write", key="k"), task("nope", key="k"), task("delete", key=7)):
        assert store.apply(bad).ok is False
    assert store.dump() == before


def test_differences_name_what_differs(tmp_path: Path) -> None:
    live = [("r", "a", "1", "t1"), ("r", "b", "2", "t1")]
    rebuilt = [("r", "a", "1", "t2"), ("r", "c", "3", "t1")]
    diffs = differences(live, rebuilt)
    assert len(diffs) == 3
    assert "run r key 'b': only in the live store" in diffs
    assert "run r key 'c': only in the rebuilt store" in diffs


def test_rebuild_refuses_an_existing_target(tmp_path: Path) -> None:
    target = tmp_path / "exists.db"
    target.write_bytes(b"")
    with pytest.raises(RebuildTargetExists):
        rebuild_store([], target)
