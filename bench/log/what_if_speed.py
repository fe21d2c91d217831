"""What-if replay: ``what_if`` (decide re-driven twice over every logged input, in
step: once with the recorded config, which must reproduce the log, and once with a
setting changed) of a ~10,000-event run whose change changes nothing, so every
decision is re-driven to the log's end (the what-if's worst case), against
``replay_check`` of the same log (the baseline), in the same process.

Target: at most 3x the replay (two re-drives, plus comparing each decision's derived
events and tasks). A run's what-if must stay linear in its length: the prompt is
compared by its ``prompt_sha256`` (the chained hash ``replay`` already computes), never
message by message.
"""

from __future__ import annotations

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
from contreact_events.config.overrides import parse_assignments
from contreact_events.history.replay import replay_check
from contreact_events.history.what_if import what_if

REPEATS = 3
TARGET_RATIO = 3.0
CHANGE = ("limits.memory_value_chars=30000", "diversity.moderate_threshold=0.72")
"""Settings the run reads but whose change alters none of its decisions."""


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.log.what_if_speed")
    header("what-if speed")
    if args.smoke:
        use_smoke_sizes(globals(), REPEATS=1)
    events, _state = generate_log(300 if args.smoke else None)
    assignments = parse_assignments(CHANGE, option="--what-if")
    row("events", len(events), "")
    report = what_if(events, assignments)
    assert report.divergence is None and report.changes, report.describe()
    row("decisions re-driven", report.decisions, "")
    assert replay_check(events).ok
    replay_s = median_time(lambda: replay_check(events), REPEATS)
    what_if_s = median_time(lambda: what_if(events, assignments), REPEATS)
    row("replay --check (baseline)", replay_s * 1000, "ms")
    row("what-if, nothing changes", what_if_s * 1000, "ms")
    value = ratio("what-if / replay", what_if_s, replay_s)
    ratio_verdict(
        "what-if speed",
        value,
        TARGET_RATIO,
        f"a what-if over the whole run costs {value:.2f}x its replay (<= {TARGET_RATIO}x)",
    )


if __name__ == "__main__":
    main()
