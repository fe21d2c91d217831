"""Entry point: ``contreact-orchestrator [--burst]``: one replica of the orchestrator."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

import redis.asyncio as aioredis

from contreact_bus.code_version import code_version
from contreact_bus.connection import connect
from contreact_bus.service import instance_name, serving, setup_logging
from contreact_bus.streams.inbox import Inbox
from contreact_bus.traces import RunTraces, open_traces
from contreact_events.names import INBOX_SHARDS_KEY
from contreact_orchestrator.exceptions import ShardCountMismatch
from contreact_orchestrator.orchestrator import Orchestrator
from contreact_orchestrator.replica import Replica
from contreact_orchestrator.settings import OrchestratorSettings

log = logging.getLogger(__name__)


async def deployment_shards(redis: aioredis.Redis, configured: int) -> int:
    """The deployment's inbox shard count: recorded by its first orchestrator, then fixed."""
    await redis.set(INBOX_SHARDS_KEY, configured, nx=True)
    recorded = int(await redis.get(INBOX_SHARDS_KEY) or configured)
    if recorded != configured:
        raise ShardCountMismatch(
            f"this Redis holds a deployment with {recorded} inbox shards, but "
            f"CONTREACT_ORCH_SHARDS is {configured}: set it to {recorded} (the shard count "
            "is fixed once a deployment has started)"
        )
    return recorded


async def run(
    settings: OrchestratorSettings, *, burst: bool = False, traces: RunTraces | None = None
) -> None:
    redis = await connect(settings.redis, wait=True)
    try:
        inbox = Inbox(redis, await deployment_shards(redis, settings.shards))
        orchestrator = Orchestrator(
            redis,
            settings.archive_dir,
            code_version("contreact-orchestrator", Path(__file__)),
            inbox,
            log_retention_s=settings.log_retention_s,
            traces=traces,
            durability=settings.durability,
        )
        replica = Replica(
            redis, orchestrator, settings.replica_name or instance_name(), settings.replica()
        )
        async with serving(redis, "orchestrator", replica.name, settings.heartbeat_s) as stop:
            await replica.run(stop, burst=burst)
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="contreact-orchestrator")
    parser.add_argument("--burst", action="store_true", help="handle what is waiting, then exit")
    args = parser.parse_args()
    settings = OrchestratorSettings()
    setup_logging(settings.log_level)
    try:
        traces = open_traces(
            settings.otlp_endpoint,
            "contreact-orchestrator",
            capture_content=settings.capture_content,
        )
    except RuntimeError as exc:  # the endpoint is set, the extra not installed
        raise SystemExit(f"contreact-orchestrator: {exc}") from None
    try:
        asyncio.run(run(settings, burst=args.burst, traces=traces))
    except ShardCountMismatch as exc:
        raise SystemExit(f"contreact-orchestrator: {exc}") from None
    finally:
        if traces is not None:
            traces.close()
