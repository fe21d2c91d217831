"""CI runs what the README promises: `.ci/run` calls the README's test command, and
that command runs ruff, the format check and strict mypy before the tests, on
versions pinned by the constraints file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make_target(name: str) -> tuple[list[str], list[str]]:
    """(prerequisites, recipe lines) of a Makefile target."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{name}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, re.MULTILINE)
    assert match, f"no target {name}"
    return match.group(1).split(), [line.strip() for line in match.group(2).splitlines()]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make test    #" in readme and "`make test` is what CI runs (`.ci/run`)" in readme
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert lines[-1] == "make test"


def test_make_test_runs_the_checks_then_the_tests() -> None:
    prerequisites, recipe = make_target("test")
    assert "check" in prerequisites and len(recipe) == 1
    # the whole suite (no path, no marker left out), with the browser tests' Chromium
    # named, spread over workers one file at a time (files that share a stack keep order),
    # in the conftest's order (the files that take minutes first), not xdist's
    assert recipe[0].endswith(
        "$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder"
    )
    assert "images-early" in prerequisites
    _, checks = make_target("check")
    assert checks == [
        "$(BIN)/ruff check .",
        "$(BIN)/ruff format --check .",
        "$(BIN)/mypy libs services cli tests bench",
    ]
    assert "strict = true" in (ROOT / "pyproject.toml").read_text()


def test_installs_are_pinned_by_the_constraints_file() -> None:
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "pip install" in line]
    assert installs and all(
        "-c constraints.txt" in line
        for line in installs
        if "pip\n" not in line and "--upgrade pip" not in line
    )
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins
    assert any(line.startswith("pydantic==") for line in pins)


def test_the_llama_wheel_is_built_once_per_version_and_flags(tmp_path: Path) -> None:
    """`deploy/llama-wheel.sh` hands back the wheel it built before (no compile), and a
    build with other CMake flags is another wheel: a native build, which crashed every
    generation here, is never taken for the portable one."""
    import subprocess

    failing_python = tmp_path / "python"  # any build attempt fails at once, loudly
    failing_python.write_text("#!/bin/sh\necho would build >&2\nexit 9\n")
    failing_python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CONTREACT_WHEEL_CACHE": str(tmp_path)}

    def script(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(ROOT / "deploy/llama-wheel.sh"), str(failing_python)],
            env={**env, **extra},
            capture_output=True,
            text=True,
        )

    first = script()
    assert first.returncode != 0 and "would build" in first.stderr  # nothing cached: builds
    (folder,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    kept = folder.with_name(folder.name.removesuffix(".tmp"))
    folder.rename(kept)
    (kept / "llama_cpp_python-0-py3-none-linux_x86_64.whl").write_bytes(b"")
    again = script()
    assert again.returncode == 0 and again.stdout.strip() == str(kept), again.stderr
    other = script(LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON")
    assert other.returncode != 0 and "would build" in other.stderr
