"""Dashboard: server time of every page of a 1,000-cycle run, of search over 1,000
runs, and of the experiment page of 18 replicas (issue 19).

Targets (a quiet machine): every page of a 1,000-cycle run under 300 ms; search over
1,000 runs under 200 ms; the experiment page of 18 replicas under 100 ms.

Server time is measured in process, as ``bench.research.ui_speed`` does: a request through the
whole ASGI app (routing, the read-only store, the view, the template or the JSON
encoder) with Starlette's TestClient, no network; the median of ``REPEATS``. Baselines
measured in the same run: the framework's floor (``/health.json``, one query); for the
long run, folding its log from its archive (what a page without projections would
have to do first); for search, reading every searched text out of the store (one
``SELECT`` of the texts table, no matching); for the experiment page, its runs in
the runs list (``/runs.json?experiment=``). The replay page keeps the last decoded snapshots
(``contreact_ui.projection.snapshots``): its figure is a researcher's second look at a position
(or a step beside it), and the cold one, its cache emptied before each request, the
first. Runs are made by ``tests/support/sim.py``
(the pure core playing the workers): the 1,000 runs and the 18 replicas are one
10-cycle run relabelled, the long run is driven whole. Semantic search is timed with
a stand-in model (``ToyModel``: the sim's toy vectors), so the figure is the
dashboard's part, not the embedding model's (``bench.services.embedder_throughput`` times that).
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._support import header, median_time, ratio, row, smoke_args, use_smoke_sizes, verdict
from contreact_bus.archive import read_archive, write_archive
from contreact_events.catalog import Event
from contreact_events.core.fold import fold_all
from contreact_events.wire.codec import event_from_json, event_to_json
from tests.support.experiment_runs import NEEDLE, ToyModel, run_log

RUNS = 1000
CYCLES_PER_RUN = 10
LONG_CYCLES = 1000
MODELS = ("gpt-5", "o3", "opus", "sonnet", "gemini", "grok")
REPLICA_LETTERS = ("A", "B", "C")
REPEATS = 11
LONG_PAGE_TARGET_MS = 300.0
SEARCH_TARGET_MS = 200.0
EXPERIMENT_TARGET_MS = 100.0
TEMPLATE = "tmpl-run"
TEMPLATE_EXPERIMENT = "tmpl-exp"
LONG = "long-run"
EXPERIMENT = "bench-exp"


def timed(call: Any) -> float:
    """The median of ``REPEATS`` calls; of 3 for a page that takes over a second (its
    figure then says enough, and the benchmark ends in minutes)."""
    first = median_time(call, 1)
    return first if first > 10 else median_time(call, REPEATS if first < 1 else 3)


def relabel(template: list[bytes], run_id: str, model: str, experiment: str) -> list[Event]:
    return [
        event_from_json(
            raw.replace(TEMPLATE.encode(), run_id.encode())
            .replace(TEMPLATE_EXPERIMENT.encode(), experiment.encode())
            .replace(b'"template-model"', f'"{model}"'.encode())
        )
        for raw in template
    ]


def write_runs(archive: Path) -> tuple[int, int]:
    """The 1,000 runs, the 18 replicas and the long run, as archive files; the
    number of events of a 10-cycle run and of the long run."""
    template_log = run_log(
        TEMPLATE, "template-model", CYCLES_PER_RUN, experiment=TEMPLATE_EXPERIMENT
    )
    template = [event_to_json(e) for e in template_log]
    for index in range(RUNS):
        model = MODELS[index % len(MODELS)]
        write_archive(
            archive,
            f"run-{index:05d}",
            relabel(template, f"run-{index:05d}", model, f"pool-{index % 10}"),
        )
    for model in MODELS:
        for letter in REPLICA_LETTERS:
            run_id = f"{EXPERIMENT}-{model}-{letter}"
            write_archive(archive, run_id, relabel(template, run_id, model, EXPERIMENT))
    long_log = run_log(LONG, "long-model", LONG_CYCLES, experiment="long-exp")
    write_archive(archive, LONG, long_log)
    return len(template), len(long_log)


def main(argv: list[str] | None = None) -> None:
    from fastapi.testclient import TestClient

    from contreact_ui.app import create_app
    from contreact_ui.projection.rebuild import rebuild
    from contreact_ui.semantic import TextEmbedder
    from contreact_ui.settings import UISettings

    args = smoke_args(argv, prog="python -m bench.research.ui_pages")
    header("dashboard: long-run pages, search, the experiment page")
    if args.smoke:
        use_smoke_sizes(globals(), RUNS=12, CYCLES_PER_RUN=3, LONG_CYCLES=12, REPEATS=2)
    with tempfile.TemporaryDirectory(prefix="bench-ui-pages-") as workdir:
        data = Path(workdir)
        archive = data / "runs"
        per_run, long_events = write_runs(archive)
        replicas = len(MODELS) * len(REPLICA_LETTERS)
        print(
            f"   {RUNS} runs of {CYCLES_PER_RUN} cycles ({per_run} events each), "
            f"{replicas} replicas of an experiment, one run of {LONG_CYCLES} cycles "
            f"({long_events} events), as archive files"
        )
        started = time.perf_counter()
        report = asyncio.run(rebuild(data / "ui.db", None, archive))
        assert not report.problems, report.problems
        row("rebuild the projections (search index included)", time.perf_counter() - started, "s")
        app = create_app(UISettings(data_dir=data, redis_url="redis://unused"))
        app.state.embedder = TextEmbedder(ToyModel())
        client = TestClient(app)

        def get(path: str) -> Any:
            def call() -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)

            return call

        get("/health.json")()  # the first request starts the app
        floor = median_time(get("/health.json"), REPEATS)
        row("framework floor: /health.json", floor * 1000, "ms")

        long_fold = median_time(lambda: fold_all(read_archive(archive, LONG) or []), 3)
        row(f"baseline: fold the {LONG_CYCLES}-cycle run from its archive", long_fold * 1000, "ms")
        last = LONG_CYCLES
        long_pages = [
            ("run page", f"/runs/{LONG}"),
            ("run page (JSON)", f"/runs/{LONG}.json"),
            ("memory at the last cycle", f"/runs/{LONG}/memory?cycle={last}"),
            ("event log, first page", f"/runs/{LONG}/events"),
            ("event log of one cycle", f"/runs/{LONG}/events?cycle={last // 2}"),
            ("one event", f"/runs/{LONG}/events/{long_events // 2}"),
            ("replay at the last cycle", f"/runs/{LONG}/replay?cycle={last}"),
            ("its timeline at the last cycle", f"/runs/{LONG}/timeline?cycle={last}"),
            ("its lineage page (no fork)", f"/runs/{LONG}/lineage"),
            ("compare the run", f"/compare?run={LONG}"),
            ("its experiment page", "/experiments/long-exp"),
            ("search in it", f"/search?q={NEEDLE}&run={LONG}"),
            ("composer from it", f"/compose?from={LONG}"),
            ("metrics CSV", f"/runs/{LONG}/cycles.csv"),
        ]
        long_figures = {}
        for _, path in long_pages:  # warm the templates
            get(path)()
        for label, path in long_pages:
            long_figures[label] = timed(get(path)) * 1000
            row(f"{LONG_CYCLES}-cycle run: {label}", long_figures[label], "ms")
        replay_last = get(f"/runs/{LONG}/replay?cycle={last}")

        def replay_cold() -> None:
            app.state.snapshots.clear()  # as the first visit: its snapshot decoded again
            replay_last()

        label = "replay at the last cycle, cold"
        long_figures[label] = timed(replay_cold) * 1000
        row(f"{LONG_CYCLES}-cycle run: {label}", long_figures[label], "ms")
        slowest = max(long_figures, key=lambda k: long_figures[k])
        ratio(f"slowest ({slowest}) / framework floor", long_figures[slowest], floor * 1000)
        ratio(f"slowest ({slowest}) / folding its log", long_figures[slowest], long_fold * 1000)

        store = sqlite3.connect(data / "ui.db")
        texts, size = store.execute(
            "SELECT count(*), sum(length(folded)) FROM text_folds"
        ).fetchone()
        read_texts = median_time(
            lambda: store.execute("SELECT sum(length(folded)) FROM text_folds").fetchone(), REPEATS
        )
        row(
            f"baseline: read the {texts:,} texts' folded copies",
            read_texts * 1000,
            "ms",
            f"({size / 1e6:.1f} M characters, in SQLite)",
        )
        searches = [
            ("keyword, in every run", f"/search?q={NEEDLE}"),
            ("keyword, JSON", f"/search.json?q={NEEDLE}"),
            ("keyword, in no run", "/search?q=no-such-words-anywhere"),
            ("keyword, memory values only", "/search?q=tides&kind=memory"),
            (
                "semantic, reflections (stand-in model)",
                "/search?q=tides&mode=semantic&kind=reflection",
            ),
        ]
        search_figures = {}
        for _, path in searches:
            get(path)()
        for label, path in searches:
            search_figures[label] = timed(get(path)) * 1000
            row(f"search over {RUNS + replicas + 1:,} runs: {label}", search_figures[label], "ms")
        keyword = max(v for k, v in search_figures.items() if k.startswith("keyword"))
        ratio("slowest keyword search / reading the texts", keyword, read_texts * 1000)
        ratio("slowest keyword search / framework floor", keyword, floor * 1000)

        listing = median_time(get(f"/runs.json?experiment={EXPERIMENT}"), REPEATS) * 1000
        row(f"baseline: the runs list of the {replicas} replicas", listing, "ms")
        experiment_figures = {}
        for label, path in [
            ("experiment page", f"/experiments/{EXPERIMENT}"),
            ("experiment page (JSON)", f"/experiments/{EXPERIMENT}.json"),
        ]:
            experiment_figures[label] = median_time(get(path), REPEATS) * 1000
            row(f"{replicas} replicas: {label}", experiment_figures[label], "ms")
        experiment = max(experiment_figures.values())
        ratio("experiment page / its runs in the runs list", experiment, listing)
        table1 = median_time(get(f"/experiments/{EXPERIMENT}/table1.csv"), REPEATS) * 1000
        row(f"{replicas} replicas: Table 1 as CSV (a download)", table1, "ms")
        store.close()

    verdict(
        f"every page of a {LONG_CYCLES}-cycle run",
        long_figures[slowest] < LONG_PAGE_TARGET_MS,
        f"slowest {slowest}: {long_figures[slowest]:.1f} ms "
        f"(target < {LONG_PAGE_TARGET_MS:.0f} ms)",
        value=long_figures[slowest],
        unit="ms",
        target=f"< {LONG_PAGE_TARGET_MS:.0f} ms",
    )
    verdict(
        f"search over {RUNS:,} runs",
        keyword < SEARCH_TARGET_MS,
        f"{keyword:.1f} ms, keyword (target < {SEARCH_TARGET_MS:.0f} ms)",
        value=keyword,
        unit="ms",
        target=f"< {SEARCH_TARGET_MS:.0f} ms",
    )
    verdict(
        f"experiment page of {replicas} replicas",
        experiment < EXPERIMENT_TARGET_MS,
        f"{experiment:.1f} ms (target < {EXPERIMENT_TARGET_MS:.0f} ms)",
        value=experiment,
        unit="ms",
        target=f"< {EXPERIMENT_TARGET_MS:.0f} ms",
    )


if __name__ == "__main__":
    main()
