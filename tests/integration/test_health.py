"""The containers' health check (`python -m contreact_bus.health SERVICE`): a replica is
healthy by its own fresh heartbeat, never by a sibling's."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from contreact_bus.health import check, names_module, read_beats, verdict
from contreact_bus.heartbeats import beat, heartbeats
from contreact_events.names import SERVICES_HEARTBEAT
from tests.support.fake_ollama import closed_port_host

NOW = 1_000_000.0


def test_own_fresh_heartbeat_is_healthy_and_a_siblings_is_not() -> None:
    beats = {"llm-worker:abc123-7": NOW - 1, "llm-worker:def456-7": NOW - 0.5}
    assert verdict(beats, "llm-worker", "abc123", 10, NOW) == (
        True,
        "llm-worker:abc123-7 beat 1.0 s ago",
    )
    healthy, why = verdict(beats, "llm-worker", "zzz999", 10, NOW)
    assert not healthy and why == "no heartbeat of llm-worker from zzz999 yet"
    # Another service of the same container, or a name that merely starts alike.
    assert not verdict({"memory:abc123-7": NOW}, "llm-worker", "abc123", 10, NOW)[0]
    assert not verdict({"llm-worker:abc1234-7": NOW}, "llm-worker", "abc123", 10, NOW)[0]
    # The orchestrator's consumer is the host name itself.
    assert verdict({"orchestrator:abc123": NOW}, "orchestrator", "abc123", 10, NOW)[0]


def test_a_stale_heartbeat_is_unhealthy_and_the_newest_counts() -> None:
    healthy, why = verdict({"embedder:abc-1": NOW - 30}, "embedder", "abc", 10, NOW)
    assert not healthy and why == "embedder:abc-1 last beat 30.0 s ago (more than 10 s)"
    # After a restart: the old process's beat is stale, the new one's is fresh.
    beats = {"embedder:abc-1": NOW - 300, "embedder:abc-9": NOW - 2}
    assert verdict(beats, "embedder", "abc", 10, NOW) == (True, "embedder:abc-9 beat 2.0 s ago")


async def test_check_reads_the_heartbeats_in_redis(aredis, redis_url) -> None:
    assert check(redis_url, "memory", "host1", 10)[0] is False
    await beat(aredis, "memory:host1-7")
    healthy, why = check(redis_url, "memory", "host1", 10)
    assert healthy, why


async def test_the_light_reader_reads_what_the_bus_writes(aredis, redis_url) -> None:
    """The probe reads heartbeats without the bus's reader (too heavy to import every
    few seconds): it must see the same names and times as ``runs.heartbeats``."""
    await beat(aredis, "embedder:box-1")
    await beat(aredis, "orchestrator:box")
    assert read_beats(redis_url) == await heartbeats(aredis)
    assert names_module().SERVICES_HEARTBEAT == SERVICES_HEARTBEAT


def test_the_probe_does_not_import_the_event_catalog() -> None:
    probe = (
        "import sys, contreact_bus.health as h; h.names_module(); "
        "print(sorted(m for m in sys.modules if m.startswith('contreact')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    light = [  # where Redis is (a URL, or the primary its sentinels name): no catalog
        "contreact_bus",
        "contreact_bus.exceptions",
        "contreact_bus.failover",
        "contreact_bus.failover.address",
        "contreact_bus.health",
        "contreact_bus.redact",
    ]
    assert out.stdout.strip() == str(light)


def test_an_unreachable_redis_is_not_judged_against_the_container() -> None:
    """Every replica of every service would be killed at once in a Redis outage; they
    reconnect by themselves, so the check says so and passes."""
    url = closed_port_host().replace("http", "redis") + "/0"
    healthy, why = check(url, "memory", "host1", 10)
    assert healthy and why.startswith(f"Redis does not answer at {url}")
    assert "not judged" in why


async def test_the_command_exits_0_when_healthy_and_1_otherwise(aredis, redis_url) -> None:
    await beat(aredis, "orchestrator:box")
    argv = [sys.executable, "-m", "contreact_bus.health"]
    env = {"REDIS_URL": redis_url, "PATH": "/usr/bin:/bin"}

    async def probe(service: str) -> tuple[int, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *argv, service, "--consumer", "box", env=env, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        return int(proc.returncode or 0), out

    code, out = await probe("orchestrator")
    assert code == 0 and b"orchestrator:box beat" in out
    code, out = await probe("llm-worker")
    assert code == 1 and b"no heartbeat of llm-worker from box" in out
