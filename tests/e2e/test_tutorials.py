"""The tutorials' commands, run as written (``docs/tutorials/*.md``): each ```bash`` and
```python`` block of a page, in order, against every service started by the page's own
``contreact up`` (the stand-in models answer from their scripts). A command that fails,
or a page that grows a command this test cannot run, fails here, so the tutorials cannot
rot. The pages share one stack, as a reader going through them in order does."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.doc_commands import Block, Command, blocks
from tests.support.stack import Stack, own_database
from tests.support.stack_env import stack_environment

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
PAGES = ["first-run.md", "paper-design.md", "fork-and-what-if.md"]
UNTIL_TIMEOUT_S = 300
"""How long a block marked ``until`` may take to show its text: generous, it guards a
hang (the tutorial's 27 ratings take seconds)."""


@pytest.fixture(scope="module")
def reader(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A reader's shell: a working folder with the repository's ``configs/`` (commands run
    from the repository root), the stack's settings on free ports. The pages start and
    stop the services themselves; whatever they leave running is stopped at the end."""
    workdir = tmp_path_factory.mktemp("reader")
    (workdir / "configs").symlink_to(ROOT / "configs")
    env = stack_environment(workdir / "data", redis_url=own_database(redis_server))
    stack = Stack(env=env, data_dir=workdir / "data", workdir=workdir)
    try:
        yield stack
    finally:
        stack.cli("down")


def test_every_tutorial_is_run_here() -> None:
    assert sorted(p.name for p in TUTORIALS.glob("*.md")) == sorted(PAGES)


def run(stack: Stack, command: Command) -> subprocess.CompletedProcess[str]:
    name, *args = command.argv
    if name == "python":
        return subprocess.run(
            [sys.executable, "-c", args[0]],
            env=stack.env,
            cwd=stack.workdir,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert name == "contreact", (
        f"a tutorial command this test cannot run: {' '.join(command.argv)!r} (tutorials "
        "hold `contreact` and Python commands; mark a block `<!-- docs-test: skip: WHY -->` "
        "when another test runs it)"
    )
    return stack.cli(*args, timeout=600)


def run_block(stack: Stack, block: Block) -> str:
    deadline = time.monotonic() + UNTIL_TIMEOUT_S
    while True:
        output = ""
        for command in block.commands:
            proc = run(stack, command)
            output += proc.stdout
            assert proc.returncode == command.exit_code, (
                f"{' '.join(command.argv)[:300]} exited {proc.returncode} "
                f"(the page says {command.exit_code}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        if block.until is None or block.until in output:
            return output
        assert time.monotonic() < deadline, f"no {block.until!r} in:\n{output[-3000:]}"
        time.sleep(1)


@pytest.mark.parametrize("page", PAGES)
def test_a_tutorials_commands_run_as_written(reader: Stack, page: str) -> None:
    found = blocks(TUTORIALS / page)
    ran = [run_block(reader, block) for block in found if block.skip is None]
    assert ran, f"{page} has no command to run"


def test_the_tutorials_did_what_they_say(reader: Stack) -> None:
    """What the pages say their commands leave behind (they ran above, in order)."""
    assert (reader.workdir / "exports" / "first-run.jsonl").is_file()
    assert (reader.workdir / "tables" / "runs.parquet").is_file()
    assert (reader.workdir / "report.html").read_text().count("tutorial-paper-") > 9
    export = reader.workdir / "exports" / "tutorial-paper"
    assert len(list(export.glob("tutorial-paper-*.jsonl"))) == 9
    assert (export / "experiment.json").is_file()
    # the fork page's `down` stopped the services
    assert "supervisor" in (status := reader.cli("status").stdout) and "NOT running" in status
