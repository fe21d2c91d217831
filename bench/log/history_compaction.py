"""History compaction (issue 31): a 200-cycle scripted run with ``history: compact``
against the same run with ``history: none``, both driven through the pure core
(``decide``, the fold, and each LLM task's messages built as the orchestrator builds
them), in the same process.

Figures: the platform's cost per model call (driving the run / its calls), the replay
(``replay_check``: every prompt hash recomputed and compared), and the largest prompt
each sends. The verdict: with compaction every prompt stays under the configured
budget (system message, summary, the threshold, one cycle's messages) and the run
replays exactly.
"""

from __future__ import annotations

import time
from typing import Any

from bench._support import (
    figure,
    header,
    median_time,
    ratio,
    row,
    smoke_args,
    use_smoke_sizes,
    verdict,
)
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

CYCLES = 200
KEEP_LAST = 8
THRESHOLD = 24
PER_CYCLE = 7
"""Messages a cycle adds: the opening, an answer with two tool calls and their two
results, an answer with one and its result, and the reflection."""
REPEATS = 3


def agent(task: LLMTask) -> Any:
    if task.task_id.endswith("/compact"):
        return say(f"Summary before cycle {task.cycle}: I kept notes and read them back.")
    if task.step == 1:
        note = "thoughts of this cycle, kept for later"
        return say("", ("write", {"key": f"n{task.cycle}", "value": note}), ("list", {}))
    if task.step == 2:
        return say("", ("read", {"key": f"n{task.cycle}"}))
    return say("I kept a note and read it back; nothing else happened in this cycle.")


def drive(history: dict[str, Any]) -> tuple[Sim, list[LLMTask], float]:
    """The run, the LLM tasks it sent, and the time driving it took."""
    sent: list[LLMTask] = []

    def answer(task: LLMTask) -> Any:
        sent.append(task)
        return agent(task)

    sim = Sim(make_config(run_id="bench-history", cycle_count=CYCLES, history=history))
    started = time.perf_counter()
    sim.drive([answer])
    took = time.perf_counter() - started
    assert sim.state.status == "completed", sim.state.status
    return sim, sent, took


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.log.history_compaction")
    header("history compaction")
    if args.smoke:
        use_smoke_sizes(globals(), CYCLES=30, REPEATS=1)
    compact = {"policy": "compact", "keep_last": KEEP_LAST, "threshold_messages": THRESHOLD}
    runs = {}
    for name, history in (("none", {"policy": "none"}), ("compact", compact)):
        times = []
        for _ in range(REPEATS):
            sim, sent, took = drive(history)
            times.append(took)
        calls = [t for t in sent if not t.task_id.endswith("/compact")]
        per_step = sorted(times)[len(times) // 2] / len(calls)
        log = list(sim.log)
        replay_s = median_time(lambda: replay_check(log), REPEATS)  # noqa: B023
        report = replay_check(sim.log)
        runs[name] = (sim, calls, per_step, replay_s, report.ok)
        row(f"{name}: model calls", len(calls), "")
        row(f"{name}: compactions", sim.state.compactions, "")
        row(f"{name}: platform time per model call", per_step * 1e6, "us")
        row(f"{name}: replay", replay_s * 1000, "ms")
        row(f"{name}: largest prompt", max(len(t.messages) for t in calls), "messages")
        chars = max(sum(len(m.content) for m in t.messages) for t in calls)
        row(f"{name}: largest prompt", chars, "chars")
    _sim, _none_calls, none_step, none_replay, _ok = runs["none"]
    sim, calls, step, replay_s, ok = runs["compact"]
    figure(
        "per step, compact / none",
        ratio("per step, compact / none", step, none_step),
        "x",
        f"the platform's time per model call of a {CYCLES}-cycle run",
    )
    figure("replay, compact / none", ratio("replay, compact / none", replay_s, none_replay), "x")
    budget = 1 + 1 + THRESHOLD + PER_CYCLE
    largest = max(len(t.messages) for t in calls)
    verdict(
        "history compaction",
        ok and largest <= budget and sim.state.compactions > 0,
        f"every prompt of the compacted run has at most {largest} messages (budget {budget}), "
        f"{sim.state.compactions} compactions, replay exact: {ok}",
        value=largest,
        unit="messages",
        target=f"every prompt <= {budget} messages, replay exact",
    )


if __name__ == "__main__":
    main()
