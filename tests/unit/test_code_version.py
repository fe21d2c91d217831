"""The code version a run records: package version, commit, dirty flag."""

from __future__ import annotations

import subprocess
from importlib.metadata import version
from pathlib import Path

from contreact_bus.code_version import code_version


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_commit_and_the_dirty_flag_are_recorded(tmp_path: Path) -> None:
    base = version("contreact-orchestrator")
    source = tmp_path / "main.py"
    assert code_version("contreact-orchestrator", source) == base  # not a git tree
    source.write_text("print('v1')\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "main.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    commit = git(tmp_path, "rev-parse", "HEAD")
    assert code_version("contreact-orchestrator", source) == f"{base}+g{commit}"
    source.write_text("print('v2')\n")
    assert code_version("contreact-orchestrator", source) == f"{base}+g{commit}.dirty"


def test_this_checkout_is_versioned() -> None:
    here = Path(__file__)
    stamp = code_version("contreact-orchestrator", here)
    assert "+g" in stamp and len(stamp.split("+g")[1].removesuffix(".dirty")) == 40
