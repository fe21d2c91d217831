"""A quarantined run (its log cannot be read) through the CLI, against a real Redis
and a real orchestrator: the commands over every run skip it by name and go on
(``memory-rebuild``, ``search``); ``reply`` and ``cancel`` say at once that it is
quarantined and why, instead of waiting 10 s and asking whether the orchestrator runs;
and a run whose log is readable again after a restart stops being listed as
quarantined, so those commands take it again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve
from contreact_cli.main import main
from contreact_events.names import INBOX_GROUP, run_log_key, run_meta_key, shard_lease_key
from contreact_events.wire.tasks import InboxMessage
from contreact_memory.store import MemoryStore
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

FAST = ConsumerSettings(block_ms=50, reclaim_idle_ms=200, reclaim_every_s=0.0)


async def _quarantine_one(redis_url: str, data: Path, *, waiting_task: str = "") -> bytes | str:
    """Runs ``good`` and ``corrupt``; a bad entry in ``corrupt``'s log, then a restart
    of the orchestrator, which quarantines it. Returns the bad entry's id."""
    redis = aioredis.Redis.from_url(redis_url)
    try:
        await use_one_shard(redis)
        orchestrator = await owning_orchestrator(redis, data / "runs", owner="first")
        for run_id in ("good", "corrupt"):
            config = make_config(run_id=run_id)
            await Inbox(redis, 1).send(
                InboxMessage(
                    run_id=run_id, kind="RunRequested", data={"config": config.model_dump()}
                )
            )
        consumer = Consumer(redis, INBOX, INBOX_GROUP, "orch", FAST)
        await serve(consumer, InboxMessage, orchestrator.handle, burst=True)
        bad = await redis.xadd(run_log_key("corrupt"), {"type": "RunStarted", "event": "{oops"})
        if waiting_task:  # as the listing of a run that waited for the operator says
            await redis.hset(run_meta_key("corrupt"), "waiting_task", waiting_task)
        await redis.delete(shard_lease_key(0))  # the orchestrator restarts
        await owning_orchestrator(redis, data / "runs", owner="restarted")
        meta = await redis.hgetall(run_meta_key("corrupt"))
        assert meta[b"status"] == b"quarantined", meta
        return bad
    finally:
        await redis.aclose()


@pytest.fixture
def data(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    MemoryStore.open(tmp_path / "data" / "memory.db").close()
    return tmp_path / "data"


def run_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return int(exited.value.code or 0)


def test_memory_rebuild_over_every_run_skips_the_quarantined_one_by_name(
    redis_url: str, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_quarantine_one(redis_url, data))
    assert run_cli("memory-rebuild") == 3
    captured = capsys.readouterr()
    (warning,) = captured.err.strip().splitlines()
    assert warning.startswith("contreact: warning: skipped run corrupt: its log cannot be read")
    assert "not valid JSON" in warning
    assert "of 1 run(s): identical to the live store" in captured.out
    assert run_cli("memory-rebuild", "good") == 0  # named runs: nothing skipped
    assert run_cli("memory-rebuild", "corrupt") == 2  # asked for by name: an error
    assert "corrupt" in capsys.readouterr().err


def test_search_over_every_run_skips_the_quarantined_one_and_exits_0(
    redis_url: str, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_quarantine_one(redis_url, data))
    assert run_cli("search", "anything", "--json") == 0
    captured = capsys.readouterr()
    (warning,) = captured.err.strip().splitlines()
    assert warning.startswith("contreact: warning: skipped run corrupt: its log cannot be read")
    assert captured.out.strip() == "[]"


@pytest.mark.parametrize(
    "command", [("reply", "corrupt", "hello"), ("cancel", "corrupt")], ids=["reply", "cancel"]
)
def test_reply_and_cancel_say_at_once_that_the_run_is_quarantined(
    command: tuple[str, ...], redis_url: str, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_quarantine_one(redis_url, data, waiting_task="task-1"))
    assert run_cli(*command) == 2  # at once: a wait would end in "is it running?"
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("contreact: error: run corrupt is quarantined (its log cannot be read")
    assert "not valid JSON" in line and "restarted" in line and "is it running" not in line


def test_a_run_readable_again_after_a_restart_is_no_longer_listed_quarantined(
    redis_url: str, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = asyncio.run(_quarantine_one(redis_url, data))

    async def repair_and_restart() -> dict[bytes | str, bytes | str]:
        redis = aioredis.Redis.from_url(redis_url)
        try:
            await redis.xdel(run_log_key("corrupt"), bad)
            await redis.delete(shard_lease_key(0))
            await owning_orchestrator(redis, data / "runs", owner="after the repair")
            return await redis.hgetall(run_meta_key("corrupt"))
        finally:
            await redis.aclose()

    meta = asyncio.run(repair_and_restart())
    assert meta[b"status"] == b"checking" and meta[b"failure_reason"] == b""
    assert run_cli("runs") == 0
    assert "quarantined" not in capsys.readouterr().out
