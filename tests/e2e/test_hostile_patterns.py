"""Issue 29.1 through every service as processes: one run's config cannot stop the
shared embedder for the others, and a service whose heartbeat stops is treated as dead
(`contreact status` says so; the supervisor stops and restarts it).

Measured by order and outcome, never by wall time: the hostile run's paragraph check
is in flight before the others start, and the others then complete with every check
of theirs answered. The time-outs below only guard a hang and say so."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from contreact_events.names import run_log_key
from contreact_events.wire.codec import event_from_fields
from tests.support.stack import Stack, own_database, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.slow]

STALL_S = 15
"""The supervisor's limit of silence in this module's stack (`service_stall_s`)."""
HANG_GUARD_S = 300
"""Only guards a hang (a stuck embedder would hold these tests for ever)."""


@pytest.fixture(scope="module")
def stack(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The module's `contreact up`, with the supervisor's silence limit at ``STALL_S``;
    `up` may wait up to 10 minutes for every service (a guard on a loaded machine)."""
    workdir = tmp_path_factory.mktemp("stack")
    env = {"CONTREACT_SERVICE_STALL_S": str(STALL_S)}
    database = own_database(redis_server)
    with running_stack(workdir, database, "--wait", "600", env=env) as running:
        yield running


def _config(tmp_path: Path, run_id: str, replies: list[str], **diversity: Any) -> Path:
    config = {
        "run_id": run_id,
        "model_name": "scripted-model",
        "cycle_count": 2,
        "backend": "scripted",
        "script": {"replies": [{"content": text} for text in replies]},
        "diversity": {"mode": "regenerate", "max_attempts": 2, **diversity},
        "deadlines": {"embed_s": 60, "retries": 0},
    }
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _types(stack: Stack, run_id: str) -> list[tuple[str, int | None]]:
    client = redis.Redis.from_url(stack.redis_url)
    try:
        entries = client.xrange(run_log_key(run_id))
    finally:
        client.close()
    events = [event_from_fields(dict(fields or {})) for _id, fields in entries]
    return [(event.type, getattr(event, "cycle", None)) for event in events]


def _archived(stack: Stack, run_id: str) -> list[dict[str, Any]]:
    path = stack.data_dir / "runs" / f"{run_id}.events.jsonl"
    return [json.loads(line) for line in path.open()]


def test_a_catastrophic_pattern_stops_no_other_run(stack: Stack, tmp_path: Path) -> None:
    """``(a+)+$`` against a paragraph of 80 a's and a '!': Python's re backtracks about
    2**80 steps on it. The paragraph repeats, so cycle 2's check must ask whether it is
    a natural repetition while two other runs need the same embedder."""
    almost = "a" * 80 + "!"
    hostile = _config(
        tmp_path, "hostile-regex", [almost] * 3, natural_repetition_patterns=[r"(a+)+$"]
    )
    running = stack.start("run", str(hostile))
    try:
        stack.wait_until(
            lambda: (
                ("ReflectionRecorded", 2) in _types(stack, "hostile-regex")
                or running.poll() is not None
            ),
            timeout=HANG_GUARD_S,
            what="the hostile run's second reflection (its check goes out next)",
        )
        others = {
            "calm-tides": [
                "Today I traced how the ocean tides follow the moon, and wrote it down.",
                "A new direction: the mathematics of prime gaps and their irregular rhythm.",
            ],
            "calm-bach": [
                "Baroque counterpoint: how Bach layers independent melodic voices at once.",
                "Tomorrow I want to read about the history of maps and how coasts were drawn.",
            ],
        }
        starts = [stack.start("run", str(_config(tmp_path, r, t))) for r, t in others.items()]
        for proc in starts:
            stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
            assert proc.returncode == 0, stdout + stderr
        stdout, stderr = running.communicate(timeout=HANG_GUARD_S)
    finally:
        if running.poll() is None:
            running.kill()
    for run_id in others:
        events = _archived(stack, run_id)
        kinds = [e["type"] for e in events]
        assert kinds[-1] == "RunCompleted", kinds
        checked = [e["cycle"] for e in events if e["type"] == "ParagraphsChecked"]
        embedded = [e["cycle"] for e in events if e["type"] == "ReflectionEmbedded"]
        assert checked == [1, 2] and embedded == [1, 2], kinds
        assert "EmbeddingFailed" not in kinds and "TaskExpired" not in kinds
    # The hostile run's check is answered too: the pattern is matched in linear time,
    # and it does not match (the paragraph ends in '!'), so the repeat is flagged.
    events = _archived(stack, "hostile-regex")
    assert events[-1]["type"] == "RunCompleted", stdout + stderr
    checks = [
        (e["cycle"], e["attempt"], e["is_unique"])
        for e in events
        if e["type"] == "ParagraphsChecked"
    ]
    assert checks == [(1, 1, True), (2, 1, False), (2, 2, False)]


def test_a_stuck_service_is_shown_as_not_responding_then_restarted(stack: Stack) -> None:
    """A stopped process (SIGSTOP: it runs, it beats nothing, as a loop stuck in one
    call) is NOT responding in `status`; the supervisor stops it and starts another."""
    pid = stack.pid_of("embedder")
    os.kill(pid, signal.SIGSTOP)
    try:

        def row() -> dict[str, Any]:
            rows = stack.json("status")["processes"]
            (found,) = [r for r in rows if r["process"] == "embedder"]
            return dict(found)

        stack.wait_until(
            lambda: row().get("responding") is False or row()["pid"] != pid,
            timeout=HANG_GUARD_S,
            what="status to show the silent embedder",
        )
        seen = row()
        if seen["pid"] == pid:  # (the restart can come first on a slow machine)
            assert seen["alive"] and seen["heartbeat_s_ago"] >= 6
            text = stack.cli("status", check=True).stdout
            assert "NOT responding" in text and "no heartbeat for" in text
        stack.wait_until(
            lambda: row()["pid"] != pid and row()["restarts"] >= 1,
            timeout=HANG_GUARD_S,
            what="the supervisor to restart the stuck embedder",
        )
    finally:  # the stopped process, if it is still ours, may go on (and be stopped)
        with contextlib.suppress(OSError):
            if b"contreact_embedder" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGCONT)
    restarted = row()
    assert "stalled: no heartbeat" in (restarted["last_error"] or ""), restarted
    stack.wait_until(
        lambda: row().get("responding") is True, timeout=HANG_GUARD_S, what="the new embedder"
    )
