"""The version of the code that decides runs, for the record: the package version,
the git commit of the source tree it runs from, and whether that tree had
uncommitted changes (``0.1.0+g{commit}`` or ``0.1.0+g{commit}.dirty``).

Outside a git checkout (an installed wheel) it is the package version alone.
"""

from __future__ import annotations

import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def code_version(package: str, source: Path) -> str:
    """``package``'s version with the commit and dirty flag of the tree ``source`` is in."""
    try:
        base = version(package)
    except PackageNotFoundError:
        base = "0+unknown"
    commit, dirty = git_state(source)
    if commit is None:
        return base
    return f"{base}+g{commit}{'.dirty' if dirty else ''}"


def git_state(source: Path) -> tuple[str | None, bool]:
    """(commit, dirty) of the git work tree holding ``source``; (None, False) outside one."""
    folder = source if source.is_dir() else source.parent
    try:
        commit = _git(folder, "rev-parse", "HEAD")
        changes = _git(folder, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None, False
    return commit, bool(changes)


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()
