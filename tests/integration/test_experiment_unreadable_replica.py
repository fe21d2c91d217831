"""One replica whose log cannot be read does not stop an experiment's status or export:
its row says ``unreadable`` with the reason, the other replicas are read and exported,
and export names the skipped run and exits 3 (it raised and exited 2 before)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.experiments import ReplicaEntry, queue_entry
from contreact_bus.run_log import RunLog
from contreact_cli.main import main
from contreact_cli.views.experiment import ExperimentProgress
from contreact_events.names import run_log_key
from tests.support.sim import Sim, make_config, say

pytestmark = pytest.mark.redis

EXPERIMENT = "exp"


def entry(letter: str) -> ReplicaEntry:
    return ReplicaEntry(f"m-{letter}", "m", letter, "m1", f"{EXPERIMENT}-m-{letter}", 1, "0" * 64)


async def _two_replicas(redis_url: str) -> tuple[ReplicaEntry, ReplicaEntry]:
    """Two finished replicas in Redis; the second's log then gets an entry that is not
    an event."""
    good, bad = entry("A"), entry("B")
    redis = aioredis.Redis.from_url(redis_url)
    try:
        for replica in (good, bad):
            sim = Sim(make_config(run_id=replica.run_id, cycle_count=1))
            sim.drive([say("a reflection")])
            await RunLog(redis).append(replica.run_id, sim.log)
            async with redis.pipeline(transaction=False) as pipe:
                queue_entry(pipe, EXPERIMENT, replica)
                await pipe.execute()
        await redis.xadd(run_log_key(bad.run_id), {"type": "RunStarted", "event": "{oops"})
    finally:
        await redis.aclose()
    return good, bad


def run_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return int(exited.value.code or 0)


def test_progress_marks_the_unreadable_replica_and_reads_the_other(
    redis_url: str, tmp_path: Path
) -> None:
    good, bad = asyncio.run(_two_replicas(redis_url))

    async def poll() -> list[dict[str, object]]:
        redis = aioredis.Redis.from_url(redis_url)
        try:
            progress = ExperimentProgress.of([good, bad], tmp_path)
            await progress.poll(redis)
            assert progress.done
            return progress.rows()
        finally:
            await redis.aclose()

    rows = {row["run_id"]: row for row in asyncio.run(poll())}
    assert rows[good.run_id]["status"] == "completed"
    assert rows[bad.run_id]["status"] == "unreadable"
    assert "entry" in str(rows[bad.run_id]["failure_reason"])


def test_export_writes_the_readable_replicas_and_names_the_other(
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good, bad = asyncio.run(_two_replicas(redis_url))
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    assert run_cli("experiment", "export", EXPERIMENT, "--out", str(tmp_path / "out")) == 3
    err = capsys.readouterr().err
    assert f"skipped run {bad.run_id}: its log cannot be read" in err
    folder = tmp_path / "out" / EXPERIMENT
    assert (folder / f"{good.run_id}.jsonl").stat().st_size > 0
    assert not (folder / f"{bad.run_id}.jsonl").exists()
    manifest = json.loads((folder / "experiment.json").read_text())
    files = {r["run_id"]: r["file"] for r in manifest["replicas"]}
    assert files == {good.run_id: f"{good.run_id}.jsonl", bad.run_id: None}
