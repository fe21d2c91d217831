"""Dashboard: server time of its pages, and rebuilding its projections.

Targets (issue 9):
* the run page of a 50-cycle run in under 300 ms of server time;
* the runs list with 1,000 runs in under 200 ms;
* rebuilding the projections of 1,000 runs, against folding their logs: at most 3x the
  time of reading and folding the same archives (the projection is that fold plus
  writing the read models; see docs/benchmarks.md); the two are timed alternately,
  three times each, medians compared.

Server time is measured in process: a request through the whole ASGI app (routing,
the read-only store, the view, the template or the JSON encoder) with Starlette's
TestClient, no network. Baselines measured in the same run: the framework's floor
(``/health.json``: one query), and folding the run's log from its archive (what a page
without projections would have to do first). Runs are generated with
``tests/support/sim.py`` (the pure core playing the workers), 10 cycles each for the
1,000 (the paper's protocol) and written as archive files.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench._support import (
    header,
    median_time,
    ratio,
    ratio_verdict,
    row,
    smoke_args,
    use_smoke_sizes,
    verdict,
)
from contreact_bus.archive import read_archive, write_archive
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.wire.codec import event_from_json, event_to_json
from tests.support.sim import Sim, make_config, say

RUNS = int(os.environ.get("BENCH_UI_RUNS", "1000"))
CYCLES_PER_RUN = 10
LONG_CYCLES = 50
MODELS = ("gpt-5", "o3", "opus", "sonnet", "gemini", "grok")
TEMPLATE = "tmpl-run"
REPEATS = 15
RUN_PAGE_TARGET_MS = 300.0
RUNS_LIST_TARGET_MS = 200.0
REBUILD_TARGET_RATIO = 3.0


def generate(run_id: str, cycles: int) -> list[Event]:
    """A run like the paper's: memory writes, lists, reads, a message to the operator
    every third cycle, a reflection; similarity assessed every cycle (toy vectors)."""

    def reply(task: Any) -> Any:
        cycle, step = task.cycle, task.step
        if step == 1:
            return say(
                "",
                ("write", {"key": f"note-{cycle}", "value": f"what I found in cycle {cycle} " * 4}),
                ("list", {}),
            )
        if step == 2 and cycle % 3 == 0:
            return say("", ("send_message_to_operator", {"message": f"Cycle {cycle}: anyone?"}))
        if step <= 2:
            return say("", ("read", {"key": f"note-{cycle}"}))
        return say(f"Cycle {cycle}: I wrote about topic {cycle % 7} and read it back. " * 5)

    config = make_config(
        run_id=run_id,
        cycle_count=cycles,
        operator={"mode": "auto"},
        diversity={"enabled": True},
        model_name="gpt-5",
    )
    sim = Sim(config)
    state = sim.drive([reply])
    assert state.status == "completed", state.status
    return sim.log


def relabel(template: list[bytes], run_id: str, model: str) -> list[Event]:
    return [
        event_from_json(
            raw.replace(TEMPLATE.encode(), run_id.encode()).replace(
                b'"gpt-5"', f'"{model}"'.encode()
            )
        )
        for raw in template
    ]


def main(argv: list[str] | None = None) -> None:
    from fastapi.testclient import TestClient

    from contreact_ui.app import create_app
    from contreact_ui.projection.rebuild import rebuild
    from contreact_ui.settings import UISettings

    args = smoke_args(argv, prog="python -m bench.research.ui_speed")
    header("dashboard: page server time and projection rebuild")
    if args.smoke:  # the 50-cycle run stays: its pages are named after it
        use_smoke_sizes(globals(), RUNS=12, CYCLES_PER_RUN=2, REPEATS=2)
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as workdir:
        data = Path(workdir)
        archive = data / "runs"
        template = [event_to_json(e) for e in generate(TEMPLATE, CYCLES_PER_RUN)]
        for index in range(RUNS):
            run_id = f"run-{index:05d}"
            write_archive(archive, run_id, relabel(template, run_id, MODELS[index % len(MODELS)]))
        long_log = generate("long-50", LONG_CYCLES)
        write_archive(archive, "long-50", long_log)
        print(
            f"   {RUNS} runs of {CYCLES_PER_RUN} cycles ({len(template)} events each) "
            f"and one of {LONG_CYCLES} cycles ({len(long_log)} events), as archive files"
        )

        ids = [f"run-{i:05d}" for i in range(RUNS)]

        def fold_archives() -> None:
            for run_id in ids:
                fold_all(read_archive(archive, run_id) or [])

        def rebuild_all() -> None:
            asyncio.run(rebuild(data / "ui.db", None, archive))

        folds, rebuilds = [], []
        for _ in range(3):  # interleaved: a shared machine's load moves both alike
            folds.append(median_time(fold_archives, 1))
            rebuilds.append(median_time(rebuild_all, 1))
        fold_s, rebuild_s = statistics.median(folds), statistics.median(rebuilds)
        row("read + fold the 1,000 archives (baseline)", fold_s, "s")
        row("rebuild every projection from them", rebuild_s, "s", f"({RUNS + 1} runs)")
        rebuild_ratio = ratio("rebuild / read + fold", rebuild_s, fold_s)

        client = TestClient(create_app(UISettings(data_dir=data, redis_url="redis://unused")))
        for path in ("/health.json", "/runs/long-50", "/runs?limit=1000"):  # warm templates
            assert client.get(path).status_code == 200, path

        def get(path: str) -> Any:
            def call() -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)

            return call

        floor = median_time(get("/health.json"), REPEATS)
        long_fold = median_time(lambda: fold_all(read_archive(archive, "long-50") or []), 5)
        row("framework floor: /health.json", floor * 1000, "ms")
        row(f"fold the {LONG_CYCLES}-cycle run from its archive", long_fold * 1000, "ms")
        figures = {}
        for label, path in [
            ("run page, 50 cycles (HTML)", "/runs/long-50"),
            ("run page, 50 cycles (JSON)", "/runs/long-50.json"),
            ("replay of the 50-cycle run, cycle 50", "/runs/long-50/replay?cycle=50"),
            ("event log of the 50-cycle run, first 200", "/runs/long-50/events"),
            ("runs list, 1,000 runs (HTML)", "/runs?limit=1000"),
            ("runs list, 1,000 runs (JSON)", "/runs.json?limit=1000"),
            ("compare by model, 1,000 runs (HTML)", "/compare"),
        ]:
            figures[label] = median_time(get(path), REPEATS) * 1000
            row(label, figures[label], "ms")
        ratio(
            "run page (HTML) / framework floor", figures["run page, 50 cycles (HTML)"], floor * 1000
        )
        ratio(
            "run page (HTML) / folding its log",
            figures["run page, 50 cycles (HTML)"],
            long_fold * 1000,
        )
        ratio(
            "runs list (HTML) / framework floor",
            figures["runs list, 1,000 runs (HTML)"],
            floor * 1000,
        )
        size = (data / "ui.db").stat().st_size
        row("projection store size", size / 1e6, "MB", f"({size / (RUNS + 1) / 1e3:.0f} kB a run)")

    run_page = max(figures["run page, 50 cycles (HTML)"], figures["run page, 50 cycles (JSON)"])
    runs_list = max(
        figures["runs list, 1,000 runs (HTML)"], figures["runs list, 1,000 runs (JSON)"]
    )
    verdict(
        "run page of a 50-cycle run",
        run_page < RUN_PAGE_TARGET_MS,
        f"{run_page:.1f} ms (target < {RUN_PAGE_TARGET_MS:.0f} ms)",
        value=run_page,
        unit="ms",
        target=f"< {RUN_PAGE_TARGET_MS:.0f} ms",
    )
    verdict(
        "runs list with 1,000 runs",
        runs_list < RUNS_LIST_TARGET_MS,
        f"{runs_list:.1f} ms (target < {RUNS_LIST_TARGET_MS:.0f} ms)",
        value=runs_list,
        unit="ms",
        target=f"< {RUNS_LIST_TARGET_MS:.0f} ms",
    )
    ratio_verdict(
        "projection rebuild of 1,000 runs",
        rebuild_ratio,
        REBUILD_TARGET_RATIO,
        f"{rebuild_ratio:.2f}x reading and folding their logs (target <= {REBUILD_TARGET_RATIO}x)",
    )


if __name__ == "__main__":
    main()
