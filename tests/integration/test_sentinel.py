"""Redis through Sentinel (issue 32): real ``redis-server`` processes on loopback, a
primary, two replicas and three sentinels (``contreact_bus.failover.local_sentinels``). Both
kinds of client the platform makes (``failover.address.redis_client``: asyncio for the
services, sync for rq) reach the primary the sentinels name and find the promoted
replica after the primary is killed; a ``WAIT``-acknowledged write survives it; rq
works a job through them; sentinels with a password are asked with the URL's; bad
settings get one line naming the problem and the fix."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from redis.sentinel import MasterNotFoundError
from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer

from contreact_bus.backoff import REDIS_DOWN
from contreact_bus.connection import connect
from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.failover.address import BadRedisAddress, RedisAddress, redis_client
from contreact_bus.failover.durability import Durability, ReplicasBehind
from contreact_bus.failover.local_sentinels import SentinelGroup, running_sentinel_group
from contreact_bus.local_redis import free_port

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    with running_sentinel_group(tmp_path, replicas=2) as running:
        yield running


def test_both_clients_follow_a_failover_and_an_acknowledged_write_survives(
    group: SentinelGroup,
) -> None:
    async def scenario() -> tuple[bytes | str | None, int]:
        client = await connect(group.address())
        durable = Durability(replicas=2, timeout_ms=5000)
        async with client.pipeline(transaction=False) as pipe:
            pipe.set("acknowledged", "yes")
            durable.queue_wait(pipe)
            _, acked = await pipe.execute()
        durable.check(acked)  # both replicas hold it
        old = group.kill_primary()
        promoted = group.wait_for_new_primary(old)
        tries = 0
        while True:  # as every service loop: Redis down, back off, again
            try:
                await client.set("after", "1")
                break
            except REDIS_DOWN:
                tries += 1
                assert tries < 600, "never reconnected"  # (a guard against a hang)
                await asyncio.sleep(0.05)
        value = await client.get("acknowledged")
        await client.aclose()
        return value, promoted

    value, promoted = asyncio.run(scenario())
    assert value == b"yes"
    sync = redis_client(group.address(), asyncio=False)
    assert sync.get("after") == b"1"
    assert sync.connection_pool.get_master_address()[1] == promoted
    sync.close()


def test_a_wait_short_of_its_replicas_counts_as_redis_down(group: SentinelGroup) -> None:
    """More replicas asked for than exist: the write is there, but unsure; the error is
    one the services' loops wait out (a ``ConnectionError``), not a crash."""

    async def short() -> None:
        client = await connect(group.address())
        try:
            durable = Durability(replicas=3, timeout_ms=100)
            await durable.sync(client)
        finally:
            await client.aclose()

    with pytest.raises(ReplicasBehind) as caught:
        asyncio.run(short())
    assert isinstance(caught.value, REDIS_DOWN)
    assert "2 of the 3 replica(s)" in str(caught.value)


def say(text: str) -> str:
    return text.upper()


def test_rq_works_a_job_through_the_sentinels(group: SentinelGroup) -> None:
    connection = redis_client(group.address(), asyncio=False)
    queue = Queue("sentinel-test", connection=connection, serializer=JSONSerializer)
    job = queue.enqueue(say, "through sentinel")
    worker = SimpleWorker([queue], connection=connection, serializer=JSONSerializer)
    assert worker.work(burst=True, with_scheduler=True)
    job.refresh()  # type: ignore[no-untyped-call]
    assert job.return_value() == "THROUGH SENTINEL"
    connection.close()


def test_sentinels_with_a_password_are_asked_with_the_urls(tmp_path: Path) -> None:
    """Sentinels with Redis's password as their ``requirepass`` (as the swarm stack's):
    both clients ask them with the URL's password; a URL without it finds no primary."""
    with running_sentinel_group(tmp_path, password="s3cret") as group:
        assert group.address().url == "redis://:s3cret@127.0.0.1/0"
        client = redis_client(group.address(), asyncio=False, socket_timeout=5)
        client.set("k", "v")
        client.close()

        async def read() -> bytes | None:
            through = await connect(group.address())
            try:
                return cast("bytes | None", await through.get("k"))
            finally:
                await through.aclose()

        assert asyncio.run(read()) == b"v"
        bare = RedisAddress("redis://127.0.0.1/0", group.sentinel_pairs(), group.master_name)
        refused = redis_client(bare, asyncio=False, socket_timeout=5)
        with pytest.raises(MasterNotFoundError):
            refused.ping()
        refused.close()


def test_a_sentinel_that_does_not_answer_is_named(tmp_path: Path) -> None:
    silent = free_port()
    address = RedisAddress.of("redis://127.0.0.1/0", f"127.0.0.1:{silent}", "contreact")
    with pytest.raises(RedisUnavailable) as caught:
        asyncio.run(connect(address))
    line = str(caught.value)
    assert line == (
        f"No sentinel answers at 127.0.0.1:{silent}: start redis-sentinel there, "
        "or fix REDIS_SENTINELS"
    )


def test_a_master_name_the_sentinels_do_not_know_is_named(group: SentinelGroup) -> None:
    address = RedisAddress("redis://127.0.0.1/0", group.sentinel_pairs(), "no-such-master")
    with pytest.raises(RedisUnavailable) as caught:
        asyncio.run(connect(address))
    line = str(caught.value)
    assert "monitor no master named 'no-such-master' (they know: contreact)" in line
    assert "set REDIS_MASTER_NAME" in line and "\n" not in line


def test_the_cli_says_it_in_one_line(group: SentinelGroup, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
        "CONTREACT_DATA_DIR": str(tmp_path / "data"),
        "REDIS_URL": "redis://127.0.0.1/0",
        "REDIS_SENTINELS": group.sentinels_setting,
        "REDIS_MASTER_NAME": "typo",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "contreact_cli", "runs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang only
        cwd=ROOT,
    )
    assert proc.returncode != 0, proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "monitor no master named 'typo'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("sentinels", "master", "named"),
    [
        ("127.0.0.1", "contreact", "'127.0.0.1', which is not host:port"),
        ("a:1,b:port", "contreact", "'b:port', which is not host:port"),
        ("a:1", "two words", "REDIS_MASTER_NAME 'two words' is not a name"),
    ],
)
def test_settings_that_cannot_be_read_are_named(sentinels: str, master: str, named: str) -> None:
    with pytest.raises(BadRedisAddress) as caught:
        RedisAddress.of("redis://127.0.0.1/0", sentinels, master)
    assert named in str(caught.value)


def test_an_assessment_record_acknowledged_to_its_job_survives_the_failover(
    group: SentinelGroup,
) -> None:
    """``assessments.record`` with the assessor's durability returns only once the
    replicas hold the record: after the primary is killed the promoted replica has it,
    and recording the same rating again writes nothing (never twice)."""
    from datetime import UTC, datetime

    from contreact_bus.assessments import RatingKey, index, record
    from contreact_events.catalog.assessment import RunAssessed

    event = RunAssessed(
        event_id="r1|m/eval|1",
        run_id="r1",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        correlation_id="r1",
        instrument="pei",
        instrument_version="1",
        instrument_sha256="a" * 64,
        evaluator="m/eval",
        repeat=1,
        input_sha256="b" * 64,
        run_digest="c" * 64,
        run_events=10,
        job_id="job|r1",
        raw_answer="Level 5",
        status="rated",
        value=5,
    )
    key = RatingKey("pei", "m/eval", 1)
    durable = Durability(replicas=2, timeout_ms=5000)

    async def scenario() -> tuple[str, bool, dict[RatingKey, str]]:
        client = await connect(group.address())
        first = await record(client, event, key, durable)
        group.wait_for_new_primary(group.kill_primary())
        left = Durability(replicas=1, timeout_ms=5000)  # (one replica is left now)
        for _ in range(600):  # a guard against a hang only
            try:
                again = await record(client, event, key, left)
                break
            except REDIS_DOWN:
                await asyncio.sleep(0.05)
        held = await index(client, "r1")
        await client.aclose()
        assert first.new
        return first.entry_id, again.new, held

    entry_id, new_again, held = asyncio.run(scenario())
    assert not new_again
    assert held[key] == f"entry:{entry_id}"


def test_a_service_waiting_for_an_unknown_master_name_logs_why(
    group: SentinelGroup, caplog: pytest.LogCaptureFixture
) -> None:
    """A service does not exit while no primary can be found (it waits, as for a Redis
    not up yet), but its log line names the cause and the fix."""
    address = RedisAddress("redis://127.0.0.1/0", group.sentinel_pairs(), "typo")

    async def waiting() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connect(address, wait=True), 3)

    with caplog.at_level(logging.WARNING, logger="contreact_bus.backoff"):
        asyncio.run(waiting())
    lines = [r.getMessage() for r in caplog.records]
    assert any("monitor no master named 'typo'" in line for line in lines), lines
