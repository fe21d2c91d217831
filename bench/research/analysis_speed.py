"""Analysis: the dataframes of 1,000 finished 10-cycle runs, against reading and folding
their logs; and the report of an 18-run experiment (6 models x 3 replicas).

Targets:
* ``contreact analyze``'s work (read every archive, fold each run once, build the seven
  tables) takes at most twice the time of the floor under it: reading the same archives
  and folding each run (``read_archive`` + ``fold_all``), measured in the same run, both
  from the same archive files, medians of several repeats.
* The report of 18 runs of 10 cycles (statistics, four charts, every run's section,
  rendered) in at most 5 s, wall time, median of several repeats.

The runs are scripted (``tests/support/sim.py``): each cycle writes a key, lists and
reads memory, messages the operator in one cycle of three, and reflects; the diversity
monitor runs (toy vectors). Ten distinct runs are generated and written 100 times each
under other run ids (the ids rewritten in the archived JSON), so that generating them
does not dominate the benchmark.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._support import header, ratio, ratio_verdict, row, smoke_args, use_smoke_sizes, verdict
from contreact_analysis.frames import build_frames, collect_frames
from contreact_analysis.report import build_report, render_report
from contreact_bus.archive import archive_path, read_archive, write_archive
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.wire.codec import event_to_json
from tests.support.sim import Sim, make_config, say

RUNS = 1_000
TEMPLATES = 10
CYCLES = 10
REPEATS = 3
REPORT_MODELS = ("Sonnet", "Opus", "GPT5", "O3", "Gemini", "Grok")
REPORT_REPLICAS = ("A", "B", "C")
TARGET_RATIO = 2.0
TARGET_REPORT_S = 5.0


def scripted_run(run_id: str, experiment: str, model: str, k: int) -> list[Event]:
    """One finished run of ``CYCLES`` cycles; ``k`` varies its lengths."""

    def reply(task: Any) -> Any:
        if task.step == 1:
            return say(
                "",
                ("write", {"key": f"note-{task.cycle % (3 + k)}", "value": "x" * (40 * k)}),
                ("list", {}),
            )
        if task.step == 2:
            if task.cycle % 3 == 0:
                return say("", ("send_message_to_operator", {"message": f"cycle {task.cycle}"}))
            return say("", ("read", {"key": f"note-{task.cycle % (3 + k)}"}))
        words = " ".join(f"thought{(task.cycle * k + i) % 17}" for i in range(20 * k))
        return say(f"Cycle {task.cycle}: {words}")

    config = make_config(
        run_id=run_id,
        model_name=f"{model.lower()}-model",
        experiment=experiment,
        cycle_count=CYCLES,
        diversity={"enabled": True},
    )
    sim = Sim(config)
    state = sim.drive([reply])
    assert state.status == "completed", state.failure_reason
    return sim.log


def write_many(archive: Path, runs: int) -> list[str]:
    """``runs`` archived runs: ``TEMPLATES`` scripted ones, copied under new ids."""
    lines = []
    for t in range(TEMPLATES):
        events = scripted_run(f"tmpl{t:02d}", "speed", f"m{t % 2}", 1 + t % 4)
        lines.append(b"".join(event_to_json(e) + b"\n" for e in events))
    run_ids = []
    for i in range(runs):
        run_id = f"speed-m{i % 2}-{i:05d}"
        template = i % TEMPLATES
        body = lines[template].replace(f'"tmpl{template:02d}'.encode(), f'"{run_id}'.encode())
        archive_path(archive, run_id).write_bytes(body)
        run_ids.append(run_id)
    return run_ids


def read_and_fold(archive: Path, run_ids: list[str]) -> int:
    """The floor: every run's archive read (decoded, validated) and folded."""
    events = 0
    for run_id in run_ids:
        log = read_archive(archive, run_id)
        assert log is not None
        events += fold_all(log).seq
    return events


async def frames_of(archive: Path, run_ids: list[str]) -> int:
    """What ``contreact analyze`` does before writing: read, fold, build the tables."""
    frames = await collect_frames(None, archive, run_ids=run_ids)
    return len(frames.events)


def measure_frames(archive: Path, run_ids: list[str]) -> dict[str, float]:
    import asyncio

    floor, built = [], []
    events = rows = 0
    for _ in range(REPEATS):  # interleaved, so noise hits each alike
        t = time.perf_counter()
        events = read_and_fold(archive, run_ids)
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        rows = asyncio.run(frames_of(archive, run_ids))
        built.append(time.perf_counter() - t)
    assert rows == events, (rows, events)
    return {
        "events": events,
        "floor_s": statistics.median(floor),
        "frames_s": statistics.median(built),
    }


def measure_report(archive: Path) -> dict[str, float]:
    logs: dict[str, list[Event]] = {}
    for m, model in enumerate(REPORT_MODELS):
        for k, replica in enumerate(REPORT_REPLICAS, start=1):
            run_id = f"paper-{model}-{replica}"
            logs[run_id] = scripted_run(run_id, "paper", model, 1 + (m + k) % 4)
            write_archive(archive, run_id, logs[run_id])
    times, size = [], 0
    for _ in range(REPEATS):
        t = time.perf_counter()
        frames = build_frames(logs)
        html = render_report(build_report(frames, title="Experiment paper", command="bench"))
        times.append(time.perf_counter() - t)
        size = len(html.encode())
    return {"runs": len(logs), "report_s": statistics.median(times), "bytes": size}


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.research.analysis_speed")
    header("analysis: dataframes of many runs, the report of an experiment")
    if args.smoke:
        use_smoke_sizes(
            globals(), RUNS=20, TEMPLATES=2, CYCLES=2, REPEATS=1, REPORT_MODELS=("A", "B")
        )
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as folder:
        archive = Path(folder) / "runs"
        archive.mkdir()
        t = time.perf_counter()
        run_ids = write_many(archive, RUNS)
        print(
            f"   {RUNS:,} finished runs of {CYCLES} cycles archived in "
            f"{time.perf_counter() - t:.1f} s; medians of {REPEATS}"
        )
        m = measure_frames(archive, run_ids)
        r = measure_report(Path(folder) / "report")
    row("floor: read_archive + fold_all", m["floor_s"], "s", f"({int(m['events']):,} events)")
    row("dataframes: read + fold + tables", m["frames_s"], "s")
    share = ratio("dataframes time / floor time", m["frames_s"], m["floor_s"])
    ratio_verdict(
        "dataframes of many runs",
        share,
        TARGET_RATIO,
        f"{share:.2f}x the time to read and fold the logs (target <= {TARGET_RATIO:.1f}x)",
        target=f"<= {TARGET_RATIO:.1f}x",
    )
    row(
        "report: stats, charts, HTML",
        r["report_s"],
        "s",
        f"({int(r['runs'])} runs, {r['bytes'] / 1e3:.0f} kB)",
    )
    verdict(
        "report of an experiment",
        r["report_s"] <= TARGET_REPORT_S,
        f"{r['report_s']:.2f} s for {int(r['runs'])} runs (target <= {TARGET_REPORT_S:.0f} s)",
        value=r["report_s"],
        unit="s",
        target=f"<= {TARGET_REPORT_S:.0f} s",
    )


if __name__ == "__main__":
    main()
