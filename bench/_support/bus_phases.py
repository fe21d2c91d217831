"""The bus-overhead benchmark's breakdown (``bench.bus_overhead``): one step's critical
path played through the services' own classes in one process, phase by phase, and
printed per step against the raw round trip."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.streams.inbox import Inbox
from contreact_events.config import RunConfig
from contreact_events.names import INBOX_SHARDS_KEY, inbox_stream
from contreact_events.wire.tasks import InboxMessage


class Phases:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self.task_bytes: list[int] = []

    def add(self, name: str, seconds: float) -> None:
        self.samples.setdefault(name, []).append(seconds)

    def timed(self, name: str, fn: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - t)

        return wrapper


async def breakdown(
    client: aioredis.Redis, config: RunConfig, tmp: Path, most_inputs: int
) -> Phases:
    """Play a run through the services' own classes in this process, one phase at a
    time: the orchestrator's ``handle`` (its run-log append and task send timed
    apart), the worker's decode of the task, its answer and its XADD to the inbox, the
    orchestrator's decode of the result. Entries are fetched with XREVRANGE where the
    services block on XREADGROUP. What this lacks against the services is only the
    processes: blocking-read wake-ups, context switches, the acks."""
    from contreact_bus.llm_routes import llm_task_stream
    from contreact_bus.streams.task_gate import TaskGate
    from contreact_events.core.outbox import pending_tasks
    from contreact_events.names import MEMORY_TASKS_STREAM
    from contreact_events.wire.answers import tool_completed
    from contreact_events.wire.codec import message_from_fields
    from contreact_events.wire.task_history import TaskDecoder
    from contreact_events.wire.tasks import LLMTask, MemoryTask
    from contreact_llm.backends.scripted import ScriptedBackend
    from contreact_llm.handler import LLMTaskHandler
    from contreact_llm.retry import RetryPolicy
    from contreact_memory.store import MemoryStore
    from contreact_orchestrator.leases import ShardLeases
    from contreact_orchestrator.orchestrator import Orchestrator

    phases = Phases()
    await client.set(INBOX_SHARDS_KEY, 1)
    orchestrator = Orchestrator(client, tmp / "runs", "bench", Inbox(client, 1))
    lease = await ShardLeases(client, "bench", 3600).acquire(0)
    assert lease is not None
    await orchestrator.take_shard(lease)
    write = phases.timed(
        "orchestrator: append events, send task (+meta), one pipeline", orchestrator._write
    )
    orchestrator._write = write  # type: ignore[method-assign]
    llm = LLMTaskHandler(
        {"scripted": ScriptedBackend(RetryPolicy())}, Inbox(client, 1), TaskGate(client)
    )
    store = MemoryStore.open(tmp / "memory.db")
    inbox = Inbox(client, 1)
    decoder = TaskDecoder()

    async def newest(stream: str, what: str) -> dict[bytes, bytes]:
        t = time.perf_counter()
        entries = await client.xrevrange(stream, count=1)
        phases.add(what, time.perf_counter() - t)
        fields: dict[bytes, bytes] = entries[0][1]  # type: ignore[assignment]
        return fields

    message = InboxMessage(
        run_id=config.run_id, kind="RunRequested", data={"config": config.model_dump(mode="json")}
    )
    try:
        for _ in range(most_inputs):
            t = time.perf_counter()
            await orchestrator.handle(message)
            phases.add("orchestrator: handle (all of it)", time.perf_counter() - t)
            state = orchestrator._states.get(config.run_id)
            if state is None or state.terminal:
                break
            if state.phase in ("checking", "awaiting_llm"):
                [pending] = pending_tasks(state)
                assert isinstance(pending, LLMTask)
                stream = llm_task_stream(client, pending).stream
                fields = await newest(stream, "fetch task (XREVRANGE)")
                phases.task_bytes.append(sum(len(k) + len(v) for k, v in fields.items()))
                t = time.perf_counter()
                task = decoder.decode(fields)  # as the worker's scheduler does
                phases.add("worker: decode LLM task", time.perf_counter() - t)
                t = time.perf_counter()
                answer = await llm.answer(task)
                phases.add("worker: scripted answer", time.perf_counter() - t)
            else:
                fields = await newest(MEMORY_TASKS_STREAM, "fetch task (XREVRANGE)")
                t = time.perf_counter()
                mtask = message_from_fields(MemoryTask, fields)
                phases.add("worker: decode memory task", time.perf_counter() - t)
                t = time.perf_counter()
                outcome = await asyncio.to_thread(store.apply, mtask)
                phases.add("worker: memory apply (SQLite, to_thread)", time.perf_counter() - t)
                answer = tool_completed(mtask, outcome.output, ok=outcome.ok)
            t = time.perf_counter()
            await inbox.send(answer)
            phases.add("worker: send result (XADD inbox)", time.perf_counter() - t)
            fields = await newest(inbox_stream(0), "fetch result (XREVRANGE)")
            t = time.perf_counter()
            message = message_from_fields(InboxMessage, fields)
            phases.add("orchestrator: decode inbox message", time.perf_counter() - t)
    finally:
        store.close()
    return phases


def print_breakdown(title: str, phases: Phases, steps: int, rtt: float, measured: float) -> float:
    """Per step: each phase's median time times how often it ran per step (the
    orchestrator's handle of the final input, which archives the run, and the
    warm-up are thereby left out)."""
    sizes = phases.task_bytes
    print(
        f"   {title}: in one process, per step (ms; raw RTTs in brackets); LLM task "
        f"{sizes[1] / 1e3:.1f} kB at the first call, {statistics.median(sizes) / 1e3:.1f} kB "
        f"median, {sizes[-1] / 1e3:.1f} kB at the last"
    )
    handle = phases.samples["orchestrator: handle (all of it)"]
    write = phases.samples["orchestrator: append events, send task (+meta), one pipeline"]
    rest = [h - w for h, w in zip(handle, write, strict=True)]
    shown = {k: v for k, v in phases.samples.items() if k != "orchestrator: handle (all of it)"}
    shown["orchestrator: rest of handle (decide, fold...)"] = rest
    total = 0.0
    for name, samples in shown.items():
        per_step = statistics.median(samples) * len(samples) / steps
        total += per_step
        print(f"     {name:<46} {per_step * 1e3:>7.3f} ms  [{per_step / rtt:5.1f}]")
    print(f"     {'sum: the step in one process':<46} {total * 1e3:>7.3f} ms  [{total / rtt:5.1f}]")
    print(
        f"     {'the step through the services (above)':<46} {measured * 1e3:>7.3f} ms  "
        f"[{measured / rtt:5.1f}]"
    )
    print(
        f"     {'left to the processes (wake-ups, switches)':<46} "
        f"{(measured - total) * 1e3:>7.3f} ms  [{(measured - total) / rtt:5.1f}]"
    )
    return total
