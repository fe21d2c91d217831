"""``docs/benchmarks.md``: each benchmark, what it measures (its module's docstring),
and its latest figures with their target, commit, machine and date, from
``bench/results.jsonl`` (``python -m bench.X --record`` appends to it). The regression
guard's bars are lines of the same file (``verdict: guard bar``); the table under
"Regression guard" is what ``tests/integration/test_bench_smoke.py`` reads."""

from __future__ import annotations

import ast
from pathlib import Path

from bench._support.results import RESULTS_FILE, latest, read_results
from tools.docs_gen.markdown import banner, cell, code, prose, table

ROOT = Path(__file__).resolve().parents[2]
GUARD_PREFIX = "guard bar: "


def bench_modules() -> dict[str, str]:
    """Every benchmark module (``bench.log.log_growth``) with its docstring's first
    paragraph."""
    found = {}
    for path in sorted((ROOT / "bench").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if any(p.startswith("_") for p in parts):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found[".".join(parts)] = " ".join(doc.split("\n\n")[0].split())
    return found


def _value(row: dict[str, object]) -> str:
    value = row["value"]
    unit = str(row["unit"])
    if isinstance(value, int | float):
        text = f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"
        return f"{text} {unit}".strip() if unit not in ("x", "%") else f"{text}{unit}"
    return str(value)


INTRO = """\
# Benchmarks

Today's figure of each benchmark. Each is a module of `bench/`, run from the repository
root with the project's venv (`.venv/bin/python -m bench.log.log_growth`; `make bench`
runs most of them, `make bench-docker` the containers'). Each starts what it needs (a
private `redis-server` on a free port, the services as processes), stops it at the end,
and measures its baseline in the same run: machines are noisy, so each figure is a ratio
against that baseline or a time with its target, and each target ends in one
`PASS:`/`FAIL:` line.

- `--record` appends each verdict (and the few figures no target judges) to
  `bench/results.jsonl` with the commit, the machine and the date. This page shows the
  latest line of each; `python -m tools.docs_gen` rewrites it (a test fails when it is not
  rewritten). The older lines are the history, and git keeps the file's.
- `--smoke` runs the same code at a tiny size, to check in seconds that the benchmark
  still runs; `tests/integration/test_bench_smoke.py` runs every benchmark so. Smoke
  figures mean nothing: never recorded, verdicts never judged.
- A commit of `not recorded` is a figure measured before the results file, whose notes
  did not name the commit; `+changes` a tree with uncommitted changes.
"""

GUARD_TEXT = """\
A step through the services once got three times slower while nothing noticed. The
suite's smoke run of `bench.bus_overhead`
(`test_a_hot_path_costs_at_most_twice_its_recorded_ratio`) fails when a figure below is
more than **twice** the bar recorded here with its commit. Each is a ratio of two CPU
times measured in the same run (the services' CPU per step over the pure
`decide`+`fold`'s), never a wall time, since wall-time ratios moved 2-116x with the
machine's load. A figure past the bar is measured once more before the test fails. When a
change is meant to cost more, record the new bar (the median of several `python -m
bench.bus_overhead --smoke` runs) as a `guard bar` line of `bench/results.jsonl`, with its
commit. Rows: bench, figure label as printed, recorded ratio, commit, when and how.
"""


def render(results: Path = RESULTS_FILE) -> str:
    modules = bench_modules()
    rows = read_results(results)
    unknown = sorted({r["benchmark"] for r in rows} - set(modules))
    if unknown:
        raise ValueError(f"{results.name} names benchmarks bench/ has not: {', '.join(unknown)}")
    newest = latest(rows)
    figures = [r for r in newest.values() if r["verdict"] != "guard bar"]
    guards = [r for r in newest.values() if r["verdict"] == "guard bar"]
    order = {name: i for i, name in enumerate(modules)}
    figures.sort(key=lambda r: order[r["benchmark"]])
    verdicts = {"PASS": "**PASS**", "FAIL": "**FAIL**", "figure": "no target"}
    latest_table = table(
        ["benchmark", "figure", "value", "target", "verdict", "commit", "machine", "date"],
        [
            [
                code(r["benchmark"].removeprefix("bench.")),
                cell(r["metric"]),
                cell(_value(r)),
                cell(r["target"]),
                verdicts.get(r["verdict"], cell(r["verdict"])),
                code(r["commit"]),
                cell(r["machine"]),
                cell(r["date"]),
            ]
            for r in figures
        ],
    )
    guard_table = table(
        ["bench", "figure", "recorded", "commit", "measured"],
        [
            [
                r["benchmark"].removeprefix("bench."),
                code(str(r["metric"]).removeprefix(GUARD_PREFIX)),
                f"{r['value']}",
                str(r["commit"]),
                cell(f"{r['date']}, {r['detail']}"),
            ]
            for r in guards
        ],
    )
    measured = {r["benchmark"] for r in figures}
    what = table(
        ["benchmark", "what it measures", "run"],
        [
            [
                code(name.removeprefix("bench.")),
                prose(doc) + ("" if name in measured else " (no figure recorded yet)"),
                code(f"python -m {name}"),
            ]
            for name, doc in modules.items()
        ],
    )
    details = "\n".join(
        f"- `{r['benchmark'].removeprefix('bench.')}`, {cell(r['metric'])}: {prose(r['detail'])}"
        for r in figures
        if r["detail"]
    )
    return "\n".join(
        [
            "---\nhide:\n  - toc\n---\n",  # the site: room for the wide table
            banner("`bench/results.jsonl` and the benchmarks' docstrings"),
            INTRO,
            "## Latest figures\n",
            latest_table,
            "The two figures without a target are DESIGN's decisions: a step through the "
            "services keeps its guarantees at about 16.5 / 34.7 raw round trips (the 6 / 12 "
            "target is retired), and the catalog stays on pydantic with a rebuild at about "
            "0.25x reading and decoding the log (the 0.5x target is retired). They print "
            "figures, no verdict; the regression guard below keeps them from growing.\n",
            "## Regression guard\n",
            GUARD_TEXT,
            guard_table,
            "## What each measures\n",
            what,
            "## Notes on the latest figures\n",
            details + "\n",
        ]
    )
