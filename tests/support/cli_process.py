"""`contreact` as a subprocess against a test's Redis and data folder, where a user
meets it, and the check that an error is one line (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def contreact(data_dir: Path, redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `contreact ARGS` in ``data_dir``'s parent with only this Redis and data folder
    (no ``CONTREACT_*`` setting of the shell leaks in)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONTREACT_")},
        "REDIS_URL": redis_url,
        "CONTREACT_DATA_DIR": str(data_dir),
    }
    return subprocess.run(
        [sys.executable, "-m", "contreact_cli", *args],
        env=env,
        cwd=data_dir.parent,
        capture_output=True,
        text=True,
        timeout=300,  # guards a hang only
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *parts: str, start: str = "") -> None:
    """Exit 2 and one line on stderr, ``contreact: error: {start}...``, holding ``parts``."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"contreact: error: {start}"), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for part in parts:
        assert part in proc.stderr, proc.stderr
