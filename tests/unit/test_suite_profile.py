"""tools.suite_profile: a pytest run with the plugin writes each file's CPU, wall time
and test count, and the report puts the costliest file first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.suite_profile import report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_profiled_run_names_the_file_that_spent_the_cpu(
    tmp_path: Path, workers: list[str]
) -> None:
    """With xdist too: its controller receives every test's report, and its own (idle)
    figures once stood for the workers' in the report."""
    tests = tmp_path / "cases"
    tests.mkdir()
    (tests / "test_busy.py").write_text(
        "import time\n"
        "def test_spins():\n"
        "    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
    )
    (tests / "test_idle.py").write_text(
        "import time\ndef test_sleeps():\n    time.sleep(0.3)\ndef test_nothing():\n    pass\n"
    )
    out = tmp_path / "profile"
    # as inside a worker of the suite's own xdist run, whose variables it inherits
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SUITE_PROFILE_DIR": str(out),
        "PYTEST_XDIST_WORKER": "gw7",
    }
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tools.suite_profile",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            *workers,
            str(tests),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {Path(name).name: (cpu, wall, count) for name, cpu, wall, count in report(out)}
    assert set(rows) == {"test_busy.py", "test_idle.py"}
    assert rows["test_busy.py"][0] >= 0.25 > rows["test_idle.py"][0]
    assert rows["test_idle.py"][1] >= 0.3 and rows["test_idle.py"][2] == 2
    assert Path(report(out)[0][0]).name == "test_busy.py"
