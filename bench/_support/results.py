"""Today's figures: a benchmark run with ``--record`` appends each figure it judges (and
the few it only reports) to ``bench/results.jsonl``, one JSON object a line, with the
commit, the machine and the date. ``python -m tools.docs_gen`` writes
``docs/benchmarks.md`` from the latest line of each benchmark and figure; the older
lines are the history (and git keeps the file's).

A line: ``benchmark`` (the module, ``bench.log.log_growth``), ``metric`` (the verdict's
or figure's name as printed), ``value`` (a number, or the figure as printed), ``unit``,
``target`` (as the benchmark states it; empty for a figure without one), ``verdict``
(``PASS``, ``FAIL``, or ``figure`` for a figure that is not judged), ``detail`` (the
verdict line's text), ``commit``, ``machine``, ``date`` (UTC)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS_FILE = ROOT / "bench" / "results.jsonl"
RECORDED_HERE = "bench/results.jsonl"
RESULTS_ENV = "BENCH_RESULTS_FILE"
"""Another file to record into (the tests' own), in place of ``RESULTS_FILE``."""
FIELDS = (
    "benchmark",
    "metric",
    "value",
    "unit",
    "target",
    "verdict",
    "detail",
    "commit",
    "machine",
    "date",
)

_recording: dict[str, Any] = {}
"""The benchmark being recorded, once ``--record`` was parsed (module name, file, and
the commit, machine and date taken then)."""


def current_commit() -> str:
    """The short commit of the tree measured; ``+changes`` when tracked files differ
    from it (the figure is then of a tree no commit holds), the results file itself
    aside (each recorded figure changes it)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "diff", "--quiet", "HEAD", "--", ".", f":(exclude){RECORDED_HERE}"],
                cwd=ROOT,
            ).returncode
            != 0
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def machine() -> str:
    """What the figure was measured on: cores, CPU model, load when it started."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cpu(s), {model}, load {load:.1f}"


def start_recording(results_file: Path | None = None) -> None:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = spec.name if spec is not None else Path(sys.argv[0]).stem
    _recording.update(
        benchmark=name,
        file=results_file or Path(os.environ.get(RESULTS_ENV) or RESULTS_FILE),
        commit=current_commit(),
        machine=machine(),
        date=f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
    )


def stop_recording() -> None:
    _recording.clear()


def refuse_smoke() -> None:
    """A smoke run's figures mean nothing: never recorded."""
    if _recording:
        raise SystemExit(
            "bench: --record with --smoke: smoke figures mean nothing; run at full size to record"
        )


class RecordAction(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, True)
        start_recording()


def add_record_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        nargs=0,
        action=RecordAction,
        default=False,
        help="append each figure, with the commit, the machine and the date, to "
        f"{RESULTS_FILE.relative_to(ROOT)}",
    )


def record(
    metric: str,
    value: float | str,
    *,
    unit: str = "",
    target: str = "",
    verdict: str = "figure",
    detail: str = "",
) -> None:
    """Append one figure to the results file, when ``--record`` was given."""
    if not _recording:
        return
    line = {
        "benchmark": _recording["benchmark"],
        "metric": metric,
        "value": value if isinstance(value, str) else round(float(value), 4),
        "unit": unit,
        "target": target,
        "verdict": verdict,
        "detail": detail,
        "commit": _recording["commit"],
        "machine": _recording["machine"],
        "date": _recording["date"],
    }
    path: Path = _recording["file"]
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


def read_results(path: Path = RESULTS_FILE) -> list[dict[str, Any]]:
    """Every line of the results file, in the order written; a bad line is named."""
    rows = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path.name} line {number}: not JSON ({exc}); fix or remove it"
            ) from None
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise ValueError(f"{path.name} line {number}: no {', '.join(missing)}; add them")
        rows.append(row)
    return rows


def latest(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last line of each (benchmark, metric), in the order each first appeared."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        found[(row["benchmark"], row["metric"])] = row
    return found
