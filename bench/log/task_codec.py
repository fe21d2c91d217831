"""An LLM step's O(history) costs, in process (issue 20): the orchestrator's encoding of
a chat task and the LLM worker's decoding of it, at cycle 100 and 200 of the bus
benchmark's LLM-only run (``bus_overhead.llm_only_config``), each the plain way
(``tasks.task_bytes``; ``codec.message_from_fields``: every ``ChatMessage`` validated)
and with the run's history known from the call before (``wire.task_history``:
``TaskEncoder``, ``TaskDecoder``).

Each timing is the least of ``ROUNDS`` rounds of ``CALLS`` calls, the cache set back
to the call before's history before each call (what a step finds). The results are
checked equal to the plain ones first.

Target: with the history known, encoding and decoding a cycle-100 task each cost at
most half the plain way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench._support import header, ratio, ratio_verdict, row, smoke_args, use_smoke_sizes
from bench.bus_overhead import llm_only_config
from contreact_events.protocol import paper_system_prompt
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.task_history import History, TaskDecoder, TaskEncoder
from contreact_events.wire.tasks import LLMTask, task_bytes
from tests.support.sim import Sim, say

CYCLES = (100, 200)
CALLS = 1000
ROUNDS = 7
TARGET = 0.5


def tasks_at(cycles: tuple[int, ...]) -> dict[int, tuple[LLMTask, LLMTask]]:
    """The chat task of each of ``cycles`` and of the cycle before, from a scripted run."""
    config = llm_only_config(max(cycles)).model_copy(
        update={"system_prompt": paper_system_prompt()}
    )
    seen: dict[int, LLMTask] = {}

    def reply(task: LLMTask) -> Any:
        seen[task.cycle] = task
        return say(f"Reflection of cycle {task.cycle}.")

    sim = Sim(config)
    sim.start()
    sim.drive([reply])
    return {cycle: (seen[cycle - 1], seen[cycle]) for cycle in cycles}


def least_us(fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.perf_counter() - t0) / CALLS)
    return best * 1e6


def measure(before: LLMTask, task: LLMTask) -> tuple[float, float, float, float]:
    """(plain encode, encode with the history known, plain decode, decode with it), us."""
    raw = task_bytes(task)
    encoder, decoder = TaskEncoder(), TaskDecoder()
    encoder.encode(before)
    decoder.decode({b"msg": task_bytes(before)})
    encoded: History | None = encoder.cache.get(task.run_id)
    decoded: History | None = decoder.cache.get(task.run_id)
    assert encoded is not None and decoded is not None

    def encode() -> bytes:
        encoder.cache.put(task.run_id, encoded)
        return encoder.encode(task)

    def decode() -> LLMTask:
        decoder.cache.put(task.run_id, decoded)
        return decoder.decode({b"msg": raw})

    assert encode() == raw and decode() == message_from_fields(LLMTask, {b"msg": raw}) == task
    assert encoder.reused and decoder.reused
    return (
        least_us(lambda: task_bytes(task)),
        least_us(encode),
        least_us(lambda: message_from_fields(LLMTask, {b"msg": raw})),
        least_us(decode),
    )


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.log.task_codec")
    header("an LLM task's encoding and decoding")
    if args.smoke:
        use_smoke_sizes(globals(), CYCLES=(20, 40), CALLS=20, ROUNDS=1)
    ratios = {}
    for cycle, (before, task) in tasks_at(CYCLES).items():
        size = len(task_bytes(task))
        print(f"   cycle {cycle}: {len(task.messages)} messages, {size / 1e3:.1f} kB")
        plain_encode, encode, plain_decode, decode = measure(before, task)
        row("  encode: task_bytes", plain_encode, "us")
        row("  encode: TaskEncoder, history known", encode, "us")
        row("  decode: message_from_fields", plain_decode, "us")
        row("  decode: TaskDecoder, history known", decode, "us")
        ratios[cycle] = (
            ratio("  encode, history known / plain", encode, plain_encode),
            ratio("  decode, history known / plain", decode, plain_decode),
        )
    first = ratios[CYCLES[0]]
    ratio_verdict(
        "task codec",
        max(first),
        TARGET,
        f"at cycle {CYCLES[0]} encoding costs {first[0]:.2f}x and decoding {first[1]:.2f}x "
        f"the plain way (<= {TARGET}x)",
    )


if __name__ == "__main__":
    main()
