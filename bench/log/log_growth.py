"""Log growth: bytes of run log per cycle at cycle 1 and cycle 50 of a long scripted
run, against the bytes of the LLM task payloads of the same cycles (which carry the
whole, growing prompt).

Target: flat, i.e. cycle 50 costs at most 1.10x the bytes of cycle 1 (the log stores
deltas and grows linearly with the run, not quadratically).

The run is driven through the pure core (tests/support/sim.py); every cycle does the
same work (write, list, read, pattern_search, reflection). Bytes are measured two
ways: the events' stored JSON (``codec.event_to_fields``, what the orchestrator
XADDs), and Redis's own ``MEMORY USAGE`` of the stream after appending each cycle to
a private redis-server (listpack overhead included).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis

from bench._support import (
    header,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    smoke_args,
    use_smoke_sizes,
)
from contreact_bus.run_log import RunLog
from contreact_events.catalog import Event
from contreact_events.names import run_log_key
from contreact_events.wire.codec import event_to_fields, message_to_fields
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

CYCLES = 60
FIRST, LATE = 1, 50
TARGET_RATIO = 1.10


def _size(fields: dict[str, Any]) -> int:
    return sum(len(k) + len(v) for k, v in fields.items())


def drive() -> tuple[list[list[Event]], list[Event], dict[int, int], dict[int, int]]:
    """Run the scripted run; return each cycle's events, the run-level events, and
    per cycle the LLM task bytes and count."""

    def step1(task: LLMTask) -> Any:
        return say(
            "", ("write", {"key": "note", "value": f"thoughts of cycle {task.cycle}"}), ("list", {})
        )

    def step2(task: LLMTask) -> Any:
        return say("", ("read", {"key": "note"}), ("pattern_search", {"pattern": "no"}))

    def reflect(task: LLMTask) -> Any:
        return say(f"Cycle {task.cycle}: I kept a note and read it back.")

    task_bytes: dict[int, int] = {}
    task_count: dict[int, int] = {}

    class RecordingSim(Sim):
        def send(self, kind: str, causation: str | None = None, **data: Any) -> Any:
            decision = super().send(kind, causation, **data)
            for task in decision.tasks:
                if isinstance(task, LLMTask) and task.kind == "chat":
                    size = _size(message_to_fields(task))
                    task_bytes[task.cycle] = task_bytes.get(task.cycle, 0) + size
                    task_count[task.cycle] = task_count.get(task.cycle, 0) + 1
            return decision

    sim = RecordingSim(
        make_config(run_id="bench-growth", cycle_count=CYCLES, operator={"mode": "auto"})
    )
    state = sim.drive([step1, step2, reflect])
    assert state.status == "completed" and state.cycle_number == CYCLES, state.status

    cycles: list[list[Event]] = [[] for _ in range(CYCLES + 1)]
    run_level: list[Event] = []
    current = 0
    for event in sim.log:
        if event.type == "CycleStarted":
            current = event.cycle
        if current == 0 or event.type in ("RunCompleted",):
            run_level.append(event)
        else:
            cycles[current].append(event)
        if event.type == "CycleEnded":
            current = 0
    return cycles, run_level, task_bytes, task_count


async def redis_usage(url: str, cycles: list[list[Event]], run_level: list[Event]) -> list[int]:
    """MEMORY USAGE of the stream after each cycle is appended (index = cycle)."""
    client = aioredis.Redis.from_url(url)
    run_id = run_level[0].run_id
    key = run_log_key(run_id)
    log = RunLog(client)
    try:
        head = [e for e in run_level if e.type != "RunCompleted"]
        await log.append(run_id, head)
        usage = [int(await client.memory_usage(key, samples=0) or 0)]
        for events in cycles[1:]:
            await log.append(run_id, events)
            usage.append(int(await client.memory_usage(key, samples=0) or 0))
        return usage
    finally:
        await client.delete(key)
        await client.aclose()


def main(argv: list[str] | None = None) -> None:
    if smoke_args(argv, prog="python -m bench.log.log_growth").smoke:
        use_smoke_sizes(globals(), CYCLES=12, LATE=12)
    header(f"log growth: bytes of run log per cycle over a {CYCLES}-cycle scripted run")
    cycles, run_level, task_bytes, task_count = drive()
    log_bytes = [sum(_size(event_to_fields(e)) for e in events) for events in cycles]
    with redis_server() as url:
        usage = asyncio.run(redis_usage(url, cycles, run_level))
    head = sum(_size(event_to_fields(e)) for e in run_level)
    total = head + sum(log_bytes)
    n_events = sum(len(c) for c in cycles) + len(run_level)
    print(
        f"   {n_events} events; run-level events (request, check, start, completion): "
        f"{head:,} B; whole log {total:,} B of JSON, {usage[-1]:,} B in Redis"
    )
    print(
        f"   {'cycle':>7} {'events':>7} {'log JSON B':>11} {'Redis delta B':>14}"
        f" {'LLM calls':>10} {'LLM task B':>11}"
    )
    window = 5  # Redis allocates listpack nodes in steps: average its deltas
    for c in sorted({c for c in (1, 2, 10, 25, 50) if c < CYCLES} | {CYCLES}):
        lo = max(1, c - window + 1) if c > 1 else 1
        delta = (usage[c] - usage[lo - 1]) / (c - lo + 1)
        print(
            f"   {c:>7} {len(cycles[c]):>7} {log_bytes[c]:>11,} {delta:>14,.0f}"
            f" {task_count[c]:>10} {task_bytes[c]:>11,}"
        )
    print(
        f"   (Redis delta: mean growth of MEMORY USAGE over the {window} cycles "
        f"up to that one; cycle 1 alone)"
    )
    r_log = ratio(f"log bytes, cycle {LATE} / cycle {FIRST}", log_bytes[LATE], log_bytes[FIRST])
    late_delta = (usage[LATE] - usage[LATE - window]) / window
    early_delta = (usage[1 + window] - usage[1]) / window
    ratio(
        f"Redis growth, cycles {LATE - window + 1}-{LATE} / 2-{1 + window}", late_delta, early_delta
    )
    ratio(
        f"LLM task bytes, cycle {LATE} / cycle {FIRST}",
        task_bytes[LATE],
        task_bytes[FIRST],
        "(contrast: the prompt grows; tasks are not the record)",
    )
    total_tasks = sum(task_bytes.values())
    row(
        "LLM task bytes over the run / log bytes",
        total_tasks / total,
        "x",
        "(what logging whole prompts would cost, roughly)",
    )
    ratio_verdict(
        "log growth",
        r_log,
        TARGET_RATIO,
        f"cycle {LATE} adds {log_bytes[LATE]:,} B vs {log_bytes[FIRST]:,} B at cycle "
        f"{FIRST} ({r_log:.2f}x; target flat, <= {TARGET_RATIO:.2f}x)",
        target=f"<= {TARGET_RATIO:.2f}x",
    )


if __name__ == "__main__":
    main()
