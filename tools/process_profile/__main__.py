"""Where a run's Python CPU went, by program: ``python -m tools.process_profile DIR``
reads what ``tools/process_profile/sitecustomize.py`` wrote and prints, most CPU
first, each program's CPU, starts and CPU a start (`contreact` by its command).

    mkdir -p build/procs
    PYTHONPATH=.:tools/process_profile PROC_PROFILE_DIR=$PWD/build/procs make test
    python -m tools.process_profile build/procs
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def program(record: dict[str, object]) -> str:
    """A record's program: its module (``contreact_llm``), the CLI by its command."""
    name = Path(str(record["name"])).name.removesuffix(".__main__")  # a script: its name
    argv = record.get("argv")
    if name in ("contreact_cli", "contreact") and isinstance(argv, list):
        return " ".join(["contreact", *argv[1:2]])
    return name


def report(folder: Path) -> list[tuple[str, float, int]]:
    """Every program: (name, CPU-s, processes), most CPU first."""
    totals: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for path in folder.glob("*.json"):
        record = json.loads(path.read_text())
        row = totals[program(record)]
        row[0] += float(record["cpu"])
        row[1] += 1
    rows = [(name, cpu, int(n)) for name, (cpu, n) in totals.items()]
    return sorted(rows, key=lambda row: -row[1])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.process_profile DIR", file=sys.stderr)
        return 2
    rows = report(Path(argv[0]))
    print(f"{'CPU s':>8} {'starts':>6} {'a start':>8}  program")
    for name, cpu, n in rows:
        print(f"{cpu:8.1f} {n:6d} {cpu / n:8.2f}  {name}")
    print(f"{sum(r[1] for r in rows):8.1f} {sum(r[2] for r in rows):6d}  in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
