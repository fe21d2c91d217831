"""Where the suite's CPU goes, per test file: a pytest plugin and its report.

Each pytest process (every xdist worker) adds up, per test file, its own CPU and that
of the children it reaped (the CLI commands a test runs, the services a fixture
started and stopped) while that file's tests ran, and the wall time; at the end it
writes ``DIR/<worker>-<pid>.json``. Processes that daemonise (the services `contreact
up` starts) and Docker's containers are not seen: measure the whole run in a cgroup
for those (docs/explanation/test-suite.md).

    PYTHONPATH=. PYTEST_ADDOPTS="-p tools.suite_profile" SUITE_PROFILE_DIR=build/profile make test
    python -m tools.suite_profile build/profile        # the files, most CPU first
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_totals: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
_started: dict[str, tuple[float, float]] = {}


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _started[nodeid] = (_cpu(), time.monotonic())


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    cpu, wall = _started.pop(nodeid, (_cpu(), time.monotonic()))
    totals = _totals[nodeid.split("::")[0]]
    totals[0] += _cpu() - cpu
    totals[1] += time.monotonic() - wall
    totals[2] += 1


def pytest_sessionfinish(session: Any) -> None:
    # xdist's controller calls the log hooks too, for the reports its workers send: its
    # own CPU there is only theirs received, and its file would stand for the workers'.
    # Told apart by what xdist gives each (a pytest run inside a worker's test inherits
    # that worker's PYTEST_XDIST_WORKER, so the environment cannot say).
    if not _totals or session.config.pluginmanager.has_plugin("dsession"):
        return
    folder = Path(os.environ.get("SUITE_PROFILE_DIR", "build/suite-profile"))
    folder.mkdir(parents=True, exist_ok=True)
    workerinput = getattr(session.config, "workerinput", None)
    worker = workerinput["workerid"] if workerinput else "main"
    content = {"files": dict(_totals), "process_cpu": _cpu()}
    (folder / f"{worker}-{os.getpid()}.json").write_text(json.dumps(content))


def report(folder: Path) -> list[tuple[str, float, float, int]]:
    """Every profiled file: (path, CPU-s, wall s, tests), most CPU first."""
    files: dict[str, tuple[str, float, float, int]] = {}
    for path in sorted(folder.glob("*.json")):  # a file's tests may have run in several
        for name, (cpu, wall, tests) in json.loads(path.read_text())["files"].items():
            _, cpu_before, wall_before, tests_before = files.get(name, (name, 0.0, 0.0, 0))
            files[name] = (name, cpu_before + cpu, wall_before + wall, tests_before + int(tests))
    return sorted(files.values(), key=lambda row: -row[1])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.suite_profile DIR", file=sys.stderr)
        return 2
    rows = report(Path(argv[0]))
    print(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
    for name, cpu, wall, tests in rows:
        print(f"{cpu:8.1f} {wall:8.1f} {tests:6d}  {name}")
    print(f"{sum(r[1] for r in rows):8.1f} {sum(r[2] for r in rows):8.1f}  in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
