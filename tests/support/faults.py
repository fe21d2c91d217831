"""The fault suite's common parts (``tests/e2e/test_faults_*.py``): chaos runs submitted
as `contreact run --detach` submits them, waiting for every run to end, and the check
of the record every fault test ends with: each run has exactly its cycle count or a
failure with a stated reason, every log folds and replays, the orchestrator's final
state equals the rebuilt one, and no memory effect was applied twice."""

from __future__ import annotations

import asyncio
from typing import Any

import redis

from contreact_bus.run_log import RunLog
from contreact_bus.runs import list_runs, load_events
from contreact_bus.streams.inbox import Inbox
from contreact_events.config import parse_run_config
from contreact_events.core.fold import fold_all
from contreact_events.history.replay import replay_check
from contreact_events.names import run_meta_key
from contreact_events.wire.tasks import InboxMessage
from tests.support.stack import Stack

QUICK_RECLAIM = {
    "CONTREACT_LLM_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_MEMORY_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_EMBED_RECLAIM_IDLE_MS": "3000",
    "CONTREACT_ORCH_LEASE_TTL_S": "4",
    "CONTREACT_ORCH_RENEW_EVERY_S": "1",
}
DEADLINES = {"check_s": 40, "llm_s": 40, "memory_s": 30, "embed_s": 60, "retries": 6}


def chaos_config(run_id: str, *, cycles: int = 4, diversity: bool = False) -> dict[str, Any]:
    """A scripted run that writes, reads and reflects each cycle, with some latency."""
    return {
        "run_id": run_id,
        "model_name": "chaos-model",
        "cycle_count": cycles,
        "backend": "scripted",
        "diversity": {"enabled": diversity},
        "deadlines": DEADLINES,
        "script": {
            "repeat": True,
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write", "arguments": {"key": "note", "value": "cycle {cycle}"}}
                    ],
                    "latency_ms": 150,
                },
                {"tool_calls": [{"name": "read", "arguments": {"key": "note"}}], "latency_ms": 150},
                {"content": "In cycle {cycle} I kept a note and read it back.", "latency_ms": 150},
            ],
        },
    }


async def submit_all(url: str, configs: list[dict[str, Any]]) -> None:
    """Submit as `contreact run --detach` does (config validated, then the request)."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        inbox = await Inbox.open(client)
        for data in configs:
            config = parse_run_config(data)
            await inbox.send(
                InboxMessage(
                    run_id=config.run_id,
                    kind="RunRequested",
                    data={"config": config.model_dump(mode="json")},
                )
            )
    finally:
        await client.aclose()


def statuses(url: str) -> dict[str, str]:
    async def read() -> dict[str, str]:
        client = redis.asyncio.Redis.from_url(url)
        try:
            return {row.run_id: row.status for row in await list_runs(client)}
        finally:
            await client.aclose()

    return asyncio.run(read())


def archived(url: str, run_ids: list[str]) -> set[str]:
    """The runs whose final digest is recorded: archived (the status says ``completed``
    a step before: the archive is written after the run's last event)."""
    client = redis.Redis.from_url(url)
    try:
        return {r for r in run_ids if client.hexists(run_meta_key(r), "digest")}
    finally:
        client.close()


def wait_for_the_end(stack: Stack, url: str, run_ids: list[str], timeout: float) -> None:
    ended = ("completed", "failed", "cancelled")
    stack.wait_until(
        lambda: (
            all(statuses(url).get(r) in ended for r in run_ids)
            and archived(url, run_ids) == set(run_ids)
        ),
        timeout=timeout,
        what=f"every run to end and be archived: {statuses(url)}",
    )


def check_the_record(stack: Stack, url: str, configs: list[dict[str, Any]]) -> dict[str, str]:
    """The guarantees, for every run: its cycles or a stated reason, the log folds and
    replays, the final digest equals the rebuilt one. Returns each run's status."""

    async def check() -> dict[str, str]:
        client = redis.asyncio.Redis.from_url(url)
        outcome: dict[str, str] = {}
        try:
            for data in configs:
                run_id = data["run_id"]
                events = await load_events(client, stack.data_dir / "runs", run_id)
                state = fold_all(events)
                report = replay_check(events)
                assert report.ok, f"{run_id}: {report.divergence and report.divergence.describe()}"
                meta = await client.hgetall(run_meta_key(run_id))
                assert meta[b"digest"].decode() == state.digest(), f"{run_id}: rebuild differs"
                if state.status == "completed":
                    assert state.cycle_number == data["cycle_count"] == len(state.cycle_metrics)
                else:
                    assert state.failure_reason, f"{run_id} ended {state.status} without a reason"
                outcome[run_id] = state.status
        finally:
            await client.aclose()
        return outcome

    outcome = asyncio.run(check())
    memory = stack.json("memory-rebuild", *[c["run_id"] for c in configs])
    assert memory["identical"] and not memory["output_mismatches"], memory
    return outcome


def answers(url: str) -> bool:
    """Whether the Redis at ``url`` answers a PING now."""
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
        return False


async def live_events(url: str, run_id: str) -> list[Any]:
    """The run's log as Redis holds it (not the archive)."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        return await RunLog(client).events(run_id)
    finally:
        await client.aclose()


async def events_anywhere(stack: Stack, url: str, run_id: str) -> list[Any]:
    """The run's log from Redis or, once archived, from the stack's archive."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        return await load_events(client, stack.data_dir / "runs", run_id)
    finally:
        await client.aclose()


async def send_to_inbox(url: str, message: InboxMessage) -> None:
    client = redis.asyncio.Redis.from_url(url)
    try:
        await (await Inbox.open(client)).send(message)
    finally:
        await client.aclose()
