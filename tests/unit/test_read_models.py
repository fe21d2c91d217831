"""The dashboard's projections against the saved logs of every released schema version:
they fold, agree with the fold's own state, and projecting a log in pieces (as the
projector does while a run is live) gives exactly the store a rebuild gives."""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
from pathlib import Path

import pytest

from contreact_bus.archive import read_archive
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.diversity.memory_projection import MemoryProjection
from contreact_events.diversity.similarity import cosine
from contreact_events.history.run_summary import run_summary
from contreact_events.wire.codec import event_from_json
from contreact_ui.exceptions import ProjectionError, ProjectionVersionMismatch
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.projection.snapshots import SnapshotCache
from contreact_ui.projection.store import ProjectionStore, connect_readonly
from contreact_ui.projection.tables import TABLES
from contreact_ui.read_models import (
    SNAPSHOT_EVERY,
    UNKNOWN_TOOL,
    RunProjector,
    describe,
    task_key,
)
from contreact_ui.text import display
from contreact_ui.views.memory import memory_entries
from contreact_ui.views.replay import replay_page

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))


def load(path: Path) -> list[Event]:
    return [event_from_json(line) for line in path.read_bytes().splitlines() if line.strip()]


def project(path: Path, events: list[Event], chunks: list[int] | None = None) -> ProjectionStore:
    store = ProjectionStore.open(path)
    projector = RunProjector(events[0].run_id)
    bounds = [0, *(chunks or []), len(events)]
    for start, end in itertools.pairwise(bounds):
        pairs = [(f"{i + 1}-0", e) for i, e in enumerate(events[start:end], start=start)]
        store.apply(projector.feed(pairs))
    return store


def dump(store: ProjectionStore) -> dict[str, list[tuple[object, ...]]]:
    return {
        table: sorted(store.conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        for table in TABLES
    }


def test_every_event_type_is_in_the_saved_logs() -> None:
    seen = {event.type for path in LOGS for event in load(path)}
    assert len(LOGS) >= 5
    assert {"SimilarityAssessed", "ParagraphsChecked", "OperatorReplied", "RunFailed"} <= seen


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_projection_agrees_with_the_fold(path: Path, tmp_path: Path) -> None:
    events = load(path)
    state = fold_all(events)
    projector = RunProjector(state.run_id)
    delta = projector.feed((None, e) for e in events)
    summary = delta.summary
    assert (summary.status, summary.cycle, summary.events) == (
        state.status,
        state.cycle_number,
        len(events),
    )
    assert summary.llm_calls == state.llm_calls
    assert summary.model == state.model_name
    ended = [row for row in delta.cycles.values() if row.ended_at is not None]
    assert [row.metrics for row in sorted(ended, key=lambda r: r.cycle)] == list(
        state.cycle_metrics
    )
    memory = MemoryProjection()
    memory.feed(events)
    assert projector.memory == memory.values
    assert delta.memory_keys == len(memory.values)
    reflections = {row.cycle: row.reflection for row in delta.cycles.values() if row.reflection}
    assert list(reflections.values()) == [r for r in state.reflection_history if r]
    assert [e.seq for e in delta.events] == list(range(1, len(events) + 1))
    assert len(delta.snapshots) == (state.cycle_number + SNAPSHOT_EVERY - 1) // SNAPSHOT_EVERY


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_projecting_in_pieces_equals_a_rebuild(path: Path, tmp_path: Path) -> None:
    events = load(path)
    whole = dump(project(tmp_path / "whole.db", events))
    rng = random.Random(path.name)
    for attempt in range(3):
        cuts = sorted(rng.sample(range(1, len(events)), k=min(len(events) - 1, 4 + attempt)))
        pieces = dump(project(tmp_path / f"pieces-{attempt}.db", events, cuts))
        assert pieces == whole


def test_one_at_a_time_equals_a_rebuild(tmp_path: Path) -> None:
    events = load(FIXTURES / "runlog-v2-regenerate.jsonl")
    whole = dump(project(tmp_path / "whole.db", events))
    assert dump(project(tmp_path / "each.db", events, list(range(1, len(events))))) == whole


def test_regenerations_and_operator_exchanges(tmp_path: Path) -> None:
    regenerate = RunProjector("fixture-regenerate").feed(
        (None, e) for e in load(FIXTURES / "runlog-v2-regenerate.jsonl")
    )
    outcomes = {(a.cycle, a.attempt): a.outcome for a in regenerate.attempts.values()}
    assert "regenerated" in outcomes.values()
    assert any(o.startswith("accepted") for o in outcomes.values())
    completed = RunProjector("fixture-completed").feed(
        (None, e) for e in load(FIXTURES / "runlog-v1-completed.jsonl")
    )
    exchanges = list(completed.operator.values())
    assert exchanges and all(o.reply is not None for o in exchanges)
    tools = {tool for row in completed.cycles.values() for tool in row.tools}
    assert UNKNOWN_TOOL in tools  # the made-up tool 'recall' is counted, not named


def test_similarity_rows_are_recomputed_for_logs_that_predate_them() -> None:
    events = load(FIXTURES / "runlog-v2-diversity.jsonl")
    delta = RunProjector("fixture-diversity").feed((None, e) for e in events)
    vectors = {e.cycle: e.vector for e in events if e.type == "ReflectionEmbedded"}
    assert delta.similarities
    for cycle, other, value in delta.similarities:
        assert value == pytest.approx(cosine(vectors[cycle], vectors[other]), abs=1e-12)
    assessed = {e.cycle: e.max_similarity for e in events if e.type == "SimilarityAssessed"}
    for cycle, best in assessed.items():
        row = [v for c, _o, v in delta.similarities if c == cycle]
        assert (max(row) if row else None) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_replay_from_snapshots_equals_folding_the_prefix(path: Path, tmp_path: Path) -> None:
    events = load(path)
    project(tmp_path / "ui.db", events).close()
    conn = connect_readonly(tmp_path / "ui.db")
    for seq in range(len(events) + 1):
        page = replay_page(conn, events[0].run_id, seq, None, snapshots=SnapshotCache(2))
        expected = fold_all(events[:seq]) if seq else None
        assert page.seq == seq
        if expected is not None:
            assert (page.phase, page.cycle, page.status) == (
                expected.phase,
                expected.cycle_number,
                expected.listed_status,  # as every listing shows it
            )
            assert page.metrics == expected.metrics
            assert page.advisory == expected.advisory
            assert len(page.cycle_metrics) == len(expected.cycle_metrics)


def test_memory_entries_mark_what_a_cycle_changed() -> None:
    changes = [
        (1, 1, "a", "added", "1", "agent"),
        (2, 1, "b", "added", "2", "agent"),
        (3, 2, "a", "changed", "1b", "agent"),
        (4, 2, "b", "deleted", None, "agent"),
        (5, 2, "c", "added", "3", "agent"),
        (6, 3, "c", "changed", "3b", "agent"),
        (7, 3, "c", "changed", "3", "agent"),
    ]
    at2 = {e.key: (e.value, e.change) for e in memory_entries(changes, 2, upto_seq=None)}
    assert at2 == {"a": ("1b", "changed"), "b": (None, "deleted"), "c": ("3", "added")}
    at3 = {e.key: (e.value, e.change) for e in memory_entries(changes, 3, upto_seq=None)}
    assert at3 == {"a": ("1b", None), "c": ("3", None)}  # changed and changed back
    mid = {e.key: e.change for e in memory_entries(changes, 2, upto_seq=3)}
    assert mid == {"a": "changed", "b": None}


def test_an_entry_is_persistent_by_who_wrote_it_not_by_its_prefix() -> None:
    changes = [
        (1, 1, "persistent/x", "added", "the agent's own", "agent"),
        (2, 1, "persistent/exchange-c001-s01-t00", "added", "kept", "platform"),
        (3, 1, "notes", "added", "n", "agent"),
    ]
    marked = {e.key: e.persistent for e in memory_entries(changes, 1, upto_seq=None)}
    assert marked == {
        "persistent/x": False,
        "persistent/exchange-c001-s01-t00": True,
        "notes": False,
    }


def test_a_log_that_does_not_fold_is_a_named_error() -> None:
    events = load(FIXTURES / "runlog-v1-completed.jsonl")
    projector = RunProjector(events[0].run_id)
    projector.feed((None, e) for e in events[:5])
    with pytest.raises(ProjectionError, match=r"run fixture-completed: event 6"):
        projector.feed((None, e) for e in events[7:9])


def test_a_rebuild_shows_the_runs_it_cannot_read_or_fold_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    """An archive with a line that does not decode, and one whose events stop folding,
    each keep what comes before the bad line (it used to leave the first with no rows,
    and no experiment: issue 29.10); the runs around them are whole."""
    lines = (FIXTURES / "runlog-v1-completed.jsonl").read_bytes().splitlines()
    run_id = load(FIXTURES / "runlog-v1-completed.jsonl")[0].run_id

    def archive(name: str, kept: list[bytes]) -> None:
        body = b"\n".join(
            line.replace(f'"{run_id}"'.encode(), f'"{name}"'.encode()) for line in kept
        )
        (tmp_path / "runs").mkdir(exist_ok=True)
        (tmp_path / "runs" / f"{name}.events.jsonl").write_bytes(body + b"\n")

    archive("a-good", lines)
    archive("b-garbled", [*lines[:5], b"{not json", *lines[5:]])
    archive("c-gapped", [*lines[:5], *lines[7:]])
    archive("d-good", lines)
    report = asyncio.run(rebuild(tmp_path / "ui.db", None, tmp_path / "runs"))
    assert (report.runs, sorted(report.problems)) == (2, ["b-garbled", "c-gapped"])
    assert "b-garbled.events.jsonl:6" in report.problems["b-garbled"]
    store = ProjectionStore.open(tmp_path / "ui.db")
    runs = {
        r[0]: r[1:]
        for r in store.conn.execute("SELECT run_id, events, terminal, projection_error FROM runs")
    }
    assert runs["a-good"] == runs["d-good"] == (len(lines), 1, None)
    assert runs["b-garbled"] == (5, 1, report.problems["b-garbled"])
    assert runs["c-gapped"] == (5, 1, report.problems["c-gapped"])
    assert "cannot be folded" in report.problems["c-gapped"]
    counts = dict(store.conn.execute("SELECT run_id, count(*) FROM events GROUP BY run_id"))
    assert counts == {"a-good": len(lines), "b-garbled": 5, "c-gapped": 5, "d-good": len(lines)}


def test_store_of_another_version_is_refused(tmp_path: Path) -> None:
    store = ProjectionStore.open(tmp_path / "ui.db")
    store.conn.execute("UPDATE meta SET value = '0:old' WHERE key = 'version'")
    store.close()
    with pytest.raises(ProjectionVersionMismatch, match="contreact-ui --rebuild"):
        ProjectionStore.open(tmp_path / "ui.db")


def test_readers_cannot_write(tmp_path: Path) -> None:
    project(tmp_path / "ui.db", load(LOGS[0])).close()
    conn = connect_readonly(tmp_path / "ui.db")
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only"):
        conn.execute("DELETE FROM runs")


def test_task_keys_link_requests_to_answers() -> None:
    events = load(FIXTURES / "runlog-v1-completed.jsonl")
    keys: dict[str, set[str]] = {}
    for event in events:
        key = task_key(event)
        if key:
            keys.setdefault(key, set()).add(event.type)
    assert any({"LLMRequested", "LLMResponded"} <= types for types in keys.values())
    assert any({"ToolCallRequested", "ToolCallCompleted"} <= types for types in keys.values())
    assert all(len(describe(e)) <= 200 for e in events)


def test_archive_files_project_like_the_saved_logs(tmp_path: Path) -> None:
    path = LOGS[1]
    run_id = load(path)[0].run_id
    (tmp_path / f"{run_id}.events.jsonl").write_bytes(path.read_bytes())
    archived = read_archive(tmp_path, run_id)
    assert archived == load(path)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("title\x1b]0;pwned\x07 done", "title done"),
        ("bidi \u202eevil\u202c", "bidi \ufffdevil\ufffd"),
        ("bell\x07 and nul\x00", "bell\ufffd and nul\ufffd"),
        ("lines\nand\ttabs stay", "lines\nand\ttabs stay"),
        ("crlf\r\nis a line end, a lone\r is not", "crlf\nis a line end, a lone\ufffd is not"),
        ("<script>alert(1)</script>", "<script>alert(1)</script>"),  # escaping is Jinja's job
    ],
)
def test_display_neutralizes_terminal_control(raw: str, shown: str) -> None:
    assert display(raw) == shown


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_the_dashboards_summary_is_the_cli_and_listings_run_summary(path: Path) -> None:
    """One ``run_summary`` serves ``--json``, the Redis listing and the dashboard: the
    projector's summary carries its figures unchanged, batch after batch."""
    events = load(path)
    projector = RunProjector(events[0].run_id)
    for start in range(0, len(events), 7):
        batch = events[start : start + 7]
        projector.feed([(f"{start + i + 1}-0", e) for i, e in enumerate(batch)])
        core = run_summary(fold_all(events[: start + len(batch)]))
        shown = projector.summary
        for name in (
            "status",
            "phase",
            "model",
            "resolved_model",
            "backend",
            "experiment",
            "cycle",
            "cycle_count",
            "step",
            "llm_calls",
            "events",
            "prompt_tokens",
            "completion_tokens",
            "failure_reason",
        ):
            assert getattr(shown, name) == getattr(core, name), (name, start)
