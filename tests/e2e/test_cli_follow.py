"""The CLI as a person meets it, through every service as a process: what submission
answers when several race for one run id, how a host that drops packets is reported,
and the reply prompt when the run is answered from another shell."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fake_ollama import dropping_host
from tests.support.stack import Stack, own_database, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


@pytest.fixture(scope="module")
def stack(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One stack for this module's tests (each uses its own run ids), with a progress
    line every second."""
    workdir = tmp_path_factory.mktemp("cli-follow")
    env = {"CONTREACT_PROGRESS_EVERY_S": "1"}
    with running_stack(workdir, own_database(redis_server), env=env) as running:
        yield running


def write(tmp_path: Path, name: str, **data: Any) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"model_name": "m", "cycle_count": 1, **data}))
    return path


def scripted(*replies: dict[str, Any]) -> dict[str, Any]:
    return {
        "backend": "scripted",
        "diversity": {"enabled": False},
        "script": {"replies": list(replies)},
    }


def ask(message: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "send_message_to_operator", "arguments": {"message": message}}]}


def test_of_five_concurrent_submissions_of_one_run_id_one_is_accepted(
    stack: Stack, tmp_path: Path
) -> None:
    config = write(tmp_path, "c.yaml", **scripted({"content": "done", "latency_ms": 200}))
    procs = [stack.start("run", str(config), "--detach", "--run-id", "same-id") for _ in range(5)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    accepted = [r for r in results if r[0] == 0]
    refused = [r for r in results if r[0] != 0]
    assert len(accepted) == 1, results
    assert "run same-id accepted" in accepted[0][1]
    for code, _out, err in refused:
        assert code == 2 and "already exists" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    runs = [r for r in stack.json("runs") if r["run_id"] == "same-id"]
    assert len(runs) == 1
    # The run records the code that decided it: version, commit, dirty flag.
    assert "+g" in stack.json("show", "same-id")["code_version"]


def test_a_host_that_drops_packets_fails_fast_with_progress_and_one_message(
    stack: Stack, tmp_path: Path
) -> None:
    with dropping_host() as host:
        config = write(
            tmp_path,
            "c.yaml",
            run_id="drop-1",
            backend="ollama",
            ollama_client_config={"host": host, "connect_timeout_s": 3},
        )
        # The system's TCP retries would take over two minutes and trip this guard; the
        # connect timeout (3 s) ends it long before, as the messages below say.
        proc = stack.cli("run", str(config), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"still checking the model at {host} (connect timeout 3 s)" in proc.stdout
    both = proc.stdout + proc.stderr
    assert both.count("did not accept a connection") == 1, both
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("contreact: error: ") and host in line and "connect_timeout_s" in line


class Terminal:
    """A command on a pseudo-terminal, as a person at a shell runs it."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            args, env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True
        )
        os.close(slave)
        self.screen = ""

    def wait_for(self, text: str, timeout: float = 60, *, after: int = 0) -> int:
        """Read until ``text`` shows up past position ``after``; return where it ends."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, after)) < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {text!r} on the screen:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the command ended
                    time.sleep(0.1)
        return found + len(text)

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return code


def test_the_reply_prompt_follows_the_run(stack: Stack, tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "human.yaml",
        run_id="human-1",
        cycle_count=2,
        operator={"mode": "human"},
        **scripted(ask("First question?"), {"content": "one"}, ask("Second?"), {"content": "two"}),
    )
    term = Terminal(
        [sys.executable, "-m", "contreact_cli", "run", str(config)], stack.env, tmp_path
    )
    try:
        first = term.wait_for("your reply> ")
        elsewhere = stack.cli("reply", "human-1", "from another shell", check=True)
        assert "reply delivered" in elsewhere.stdout
        noted = term.wait_for("the question was answered elsewhere", after=first)
        term.wait_for("your reply> ", after=noted)
        term.type("typed here")
        term.wait_for("run human-1 completed", timeout=60)
    finally:
        code = term.close()
    assert code == 0, term.screen
    show = stack.json("show", "human-1")
    replies = [m["content"] for m in show["message_history"] if m["role"] == "tool"]
    assert replies == ["from another shell", "typed here"]
