"""The documentation site builds with ``mkdocs build --strict`` (what ``make docs`` runs):
a broken link, a missing anchor or a page the nav names that is not there fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,  # a hang's guard, generous: the build takes seconds
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    proc = build(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    for page in ("index.html", "tutorials/first-run/index.html", "reference/cli/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Broken on purpose: a copy of the docs with a link to a page and an anchor that
    do not exist."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", project / "docs")
    index = project / "docs" / "index.md"
    index.write_text(
        index.read_text() + "\n[gone](how-to/no-such-page.md), [gone too](reference/cli.md#nope)\n"
    )
    proc = build(project, tmp_path / "site")
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr and "#nope" in proc.stderr
