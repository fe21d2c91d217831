"""A finished run leaves Redis only through its archive, against a real Redis: an
archive that cannot be written keeps the run active (and says so) until it can; a
run that ended just before the orchestrator died is archived by the next one; and
once its log has left Redis, a run's id is not taken again (orchestrator and CLI)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import yaml

from contreact_bus.archive import archive_path, read_archive
from contreact_bus.heartbeats import beat
from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_cli.main import main
from contreact_events.names import (
    ACTIVE_RUNS,
    RUNS_INDEX,
    run_log_key,
    run_meta_key,
    shard_lease_key,
)
from contreact_orchestrator.orchestrator import Orchestrator
from contreact_orchestrator.replica import Replica, ReplicaSettings
from tests.integration.test_orchestrator_faults import answer, drain, started_run, submit
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import llm_tasks, owning_orchestrator
from tests.support.waits import HANG_GUARD_S

pytestmark = pytest.mark.redis

REFUSED = "ignored RunRequested: run run-1 already exists"
"""The orchestrator's line for a second request of an existing run id."""


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


class Crash(BaseException):
    """The orchestrator's process dies here (nothing below it gets to run)."""


async def finish(redis: aioredis.Redis, orchestrator: Orchestrator) -> None:
    """Submit run-1 (one cycle) and answer it until it completes."""
    chat = await started_run(redis, orchestrator, cycle_count=1)
    await answer(redis, chat, "LLMResponded", message={"content": "the end"})
    await drain(redis, orchestrator)


async def test_an_archive_that_cannot_be_written_keeps_the_run_until_it_can(
    aredis: aioredis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be")  # root or not: unwritable
    archive_dir = data / "runs"
    orchestrator = await owning_orchestrator(aredis, archive_dir, log_retention_s=1)
    with caplog.at_level(logging.WARNING):
        await finish(aredis, orchestrator)
    events = await RunLog(aredis).events("run-1")
    assert events[-1].type == "RunCompleted"
    assert await aredis.sismember(ACTIVE_RUNS, "run-1")  # still active: not archived
    assert await aredis.ttl(run_log_key("run-1")) == -1  # and its log does not expire
    meta = await aredis.hgetall(run_meta_key("run-1"))
    assert meta[b"status"] == b"completed"
    path = str(archive_path(archive_dir, "run-1"))
    assert (
        path in meta[b"archive_error"].decode() and "attempt 1" in meta[b"archive_error"].decode()
    )
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("run-1" in line and path in line and "Error" in line for line in said), said
    assert orchestrator.unarchived_runs() == ["run-1"]

    assert await orchestrator.retry_archives() == 0  # its wait is not over yet
    assert await orchestrator.retry_archives(time.monotonic() + 3600) == 0  # still blocked
    error = await aredis.hget(run_meta_key("run-1"), "archive_error")
    assert isinstance(error, bytes) and b"attempt 2" in error

    data.unlink()  # the folder can be written now
    assert await orchestrator.retry_archives(time.monotonic() + 3600) == 1
    assert read_archive(archive_dir, "run-1") == events
    assert not await aredis.sismember(ACTIVE_RUNS, "run-1")
    meta = await aredis.hgetall(run_meta_key("run-1"))
    assert b"archive_error" not in meta and meta[b"archive"] == Path(path).name.encode()
    assert 0 < await aredis.ttl(run_log_key("run-1")) <= 1
    assert orchestrator.unarchived_runs() == []


async def test_a_serving_replica_writes_the_failed_archive_once_it_can(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """Recovered by a replica while its folder still cannot be written: the replica's
    housekeeping timer writes it once it can, with nobody asking."""
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be")
    archive_dir = data / "runs"
    first = await owning_orchestrator(aredis, archive_dir, owner="first")
    await finish(aredis, first)
    assert first.unarchived_runs() == ["run-1"]
    await aredis.delete(shard_lease_key(0))  # the first is gone

    orchestrator = Orchestrator(aredis, archive_dir, "1", Inbox(aredis, 1))
    quick = ReplicaSettings(
        lease_ttl_s=2.0,
        renew_every_s=0.1,
        deadline_check_s=0.1,
        consumer=ConsumerSettings(block_ms=50, reclaim_idle_ms=500, reclaim_every_s=0.1),
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(Replica(aredis, orchestrator, "replica", quick).run(stop))
    try:
        for _ in range(100):  # it took the shard, recovered the run, failed to archive it
            if orchestrator.unarchived_runs():
                break
            await asyncio.sleep(0.05)
        assert orchestrator.unarchived_runs() == ["run-1"]
        assert await aredis.sismember(ACTIVE_RUNS, "run-1")
        data.unlink()
        for _ in range(100):  # the first retry comes 1 s after the failure
            if not await aredis.sismember(ACTIVE_RUNS, "run-1"):
                break
            await asyncio.sleep(0.05)
        assert not await aredis.sismember(ACTIVE_RUNS, "run-1")
        assert read_archive(archive_dir, "run-1") == await RunLog(aredis).events("run-1")
        assert orchestrator.unarchived_runs() == []
    finally:
        stop.set()
        await asyncio.wait_for(serving, HANG_GUARD_S)


async def test_a_run_that_ended_as_the_orchestrator_died_is_archived_on_recovery(
    aredis: aioredis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await owning_orchestrator(aredis, tmp_path, owner="first")
    chat = await started_run(aredis, first, cycle_count=1)
    result = await answer(aredis, chat, "LLMResponded", message={"content": "the end"})

    def die(fd: int) -> None:
        raise Crash("the orchestrator dies while it writes the archive")

    monkeypatch.setattr(os, "fsync", die)
    with pytest.raises(Crash):
        await first.handle(result)  # the terminal events are appended, then it dies
    monkeypatch.undo()
    events = await RunLog(aredis).events("run-1")
    assert events[-1].type == "RunCompleted"
    assert read_archive(tmp_path, "run-1") is None

    await aredis.delete(shard_lease_key(0))  # its lease lapsed; a new orchestrator starts
    second = await owning_orchestrator(aredis, tmp_path, owner="second")
    assert read_archive(tmp_path, "run-1") == events
    assert not await aredis.sismember(ACTIVE_RUNS, "run-1")
    meta = await aredis.hgetall(run_meta_key("run-1"))
    assert meta[b"archive"] == archive_path(tmp_path, "run-1").name.encode()
    assert await aredis.ttl(run_log_key("run-1")) > 0
    await drain(aredis, second, name="second")  # the answer the first never acked
    assert await RunLog(aredis).events("run-1") == events  # nothing decided again


async def expired_run(redis: aioredis.Redis, archive_dir: Path) -> Orchestrator:
    """run-1, finished and archived, whose log has left Redis."""
    orchestrator = await owning_orchestrator(redis, archive_dir, log_retention_s=1)
    await finish(redis, orchestrator)
    assert await redis.ttl(run_log_key("run-1")) > 0
    for _ in range(40):
        if not await RunLog(redis).exists("run-1"):
            break
        await asyncio.sleep(0.1)
    assert not await RunLog(redis).exists("run-1")
    return orchestrator


async def listing(redis: aioredis.Redis, archive_dir: Path) -> tuple[object, ...]:
    return (
        await redis.hgetall(run_meta_key("run-1")),
        await redis.zscore(RUNS_INDEX, "run-1"),
        archive_path(archive_dir, "run-1").read_bytes(),
    )


async def test_an_expired_runs_id_is_refused_by_the_orchestrator(
    aredis: aioredis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive_dir = tmp_path / "runs"
    orchestrator = await expired_run(aredis, archive_dir)
    before = await listing(aredis, archive_dir)
    tasks = len(await llm_tasks(aredis))

    with caplog.at_level(logging.INFO):
        await submit(aredis)  # its archive is at hand
        await drain(aredis, orchestrator)
        await aredis.delete(shard_lease_key(0))  # an orchestrator whose data folder
        elsewhere = tmp_path / "elsewhere"  # does not hold the archive (moved, lost)
        other = await owning_orchestrator(aredis, elsewhere, owner="other")
        await submit(aredis)
        await drain(aredis, other, name="other")
    refusals = [r.getMessage() for r in caplog.records if REFUSED in r.getMessage()]
    assert len(refusals) == 2, refusals
    assert not await RunLog(aredis).exists("run-1")  # no new run under the old id
    assert await listing(aredis, archive_dir) == before
    assert len(await llm_tasks(aredis)) == tasks
    assert read_archive(elsewhere, "run-1") is None


async def test_an_expired_runs_id_is_refused_by_the_cli(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The CLI on another host than the orchestrator (no archive at hand) refuses it
    before sending anything, with the line an existing run gets."""
    archive_dir = tmp_path / "orchestrator-host" / "runs"
    await expired_run(aredis, archive_dir)
    before = await listing(aredis, archive_dir)
    for service in ("orchestrator", "llm-worker", "memory"):
        await beat(aredis, f"{service}:test")
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model_name": "m",
                "cycle_count": 1,
                "backend": "scripted",
                "diversity": {"enabled": False},
                "script": {"replies": [{"content": "x"}]},
            }
        )
    )
    sent = await aredis.xlen(INBOX)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "cli-host"))
    with pytest.raises(SystemExit) as exited:  # main runs its own event loop: a thread
        await asyncio.to_thread(
            main, ["run", str(config), "--run-id", "run-1", "--detach", "--wait", "1"]
        )
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "contreact: error: run 'run-1' already exists: "
        "set another run_id in the config or pass --run-id\n"
    )
    assert await aredis.xlen(INBOX) == sent  # nothing was sent
    assert await listing(aredis, archive_dir) == before
