"""tools.process_profile: with its folder on PYTHONPATH every Python process writes its
own CPU at exit, and the report adds them up by program, `contreact` by its command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.process_profile.__main__ import report

ROOT = Path(__file__).resolve().parents[2]
SPIN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end:\n    pass\n"


def test_each_process_writes_its_cpu_and_the_report_adds_them_by_program(
    tmp_path: Path,
) -> None:
    out = tmp_path / "procs"
    out.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'tools' / 'process_profile'}",
        "PROC_PROFILE_DIR": str(out),
    }
    (tmp_path / "spinner.py").write_text(SPIN)
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "spinner"], env=env, cwd=tmp_path, check=True)
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    help_ = subprocess.run(
        [sys.executable, "-m", "contreact_cli", "status", "--help"], env=env, capture_output=True
    )
    assert help_.returncode == 0, help_.stderr
    rows = {name: (cpu, n) for name, cpu, n in report(out)}
    assert set(rows) == {"spinner", "-c", "contreact status"}
    cpu, starts = rows["spinner"]
    assert starts == 2 and cpu >= 0.6  # each spun 0.3 CPU-s by its own clock
    assert rows["-c"][1] == rows["contreact status"][1] == 1


def test_without_its_variable_nothing_is_written(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tools' / 'process_profile'}"}
    env.pop("PROC_PROFILE_DIR", None)
    subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=tmp_path, check=True)
    assert list(tmp_path.iterdir()) == []
