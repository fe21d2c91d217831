"""Replay: ``replay_check`` (decide over every logged input, its events compared with
the log) of a ~10,000-event run, with each LLM call's prompt hash recomputed, against
the same replay without the hash (baseline), in the same process.

Target: recomputing the prompt hashes at most doubles the replay (hashing the whole
prompt at every call made it 10-45x slower on this run). The hash is
computed message by message with each message's digest kept while the message lives
(the history is shared between states), so the replay of a long run stays linear;
hashing the whole prompt at every call would make it quadratic in the run's length
(shown for comparison).
"""

from __future__ import annotations

import importlib
from typing import Any

from bench._support import (
    header,
    median_time,
    ratio,
    ratio_verdict,
    row,
    smoke_args,
    use_smoke_sizes,
)
from bench.fold_speed import generate_log
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import offered_tools_now, prompt_messages, sha256_of_prompt
from contreact_events.history.replay import replay_check

REPEATS = 3
TARGET_RATIO = 2.0
advance_module: Any = importlib.import_module("contreact_events.core.advance")
"""Where ``advance`` finds ``prompt_sha256`` (swapped here for the baselines)."""


def whole_prompt_hash(state: Any) -> str:
    """The same hash by its definition, afresh at every call: what hashing the whole
    prompt costs without the chain kept per message."""
    return sha256_of_prompt(prompt_messages(state), offered_tools_now(state))


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.log.replay_speed")
    header("replay speed")
    if args.smoke:
        use_smoke_sizes(globals(), REPEATS=1)
    events, state = generate_log(300 if args.smoke else None)
    row("events", len(events), "")
    row("messages in the last prompt", len(state.message_history), "")
    fold_s = median_time(lambda: fold_all(events), REPEATS)
    report = replay_check(events)
    assert report.ok, report.divergence
    replay_s = median_time(lambda: replay_check(events), REPEATS)
    unhashed = [
        e.model_copy(update={"prompt_sha256": None}) if e.type == "LLMRequested" else e
        for e in events
    ]
    original = advance_module.prompt_sha256
    try:
        advance_module.prompt_sha256 = lambda state: None
        assert replay_check(unhashed).ok
        base_s = median_time(lambda: replay_check(unhashed), REPEATS)
        advance_module.prompt_sha256 = whole_prompt_hash
        naive_s = median_time(lambda: replay_check(events), 1)
    finally:
        advance_module.prompt_sha256 = original
    row("fold", fold_s * 1000, "ms")
    row("replay without prompt hashes (baseline)", base_s * 1000, "ms")
    row("replay with prompt hashes", replay_s * 1000, "ms")
    row("replay, whole prompt hashed at every call", naive_s * 1000, "ms")
    value = ratio("replay with hashes / baseline", replay_s, base_s)
    ratio("whole-prompt hashing / baseline", naive_s, base_s)
    ratio("replay / fold", replay_s, fold_s)
    ratio_verdict(
        "replay speed",
        value,
        TARGET_RATIO,
        f"prompt hashes cost {value:.2f}x the replay without them (<= {TARGET_RATIO}x)",
    )


if __name__ == "__main__":
    main()
