"""Output cut short by its reader (``contreact show RUN | head -1``) ends quietly, as
in other Unix tools: no ``contreact: error: Broken pipe``, no "Exception ignored"
at exit, and the exit code of a process ended by SIGPIPE (141). Real processes on
real pipes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from contreact_bus.archive import archive_path
from contreact_events.names import RUNS_INDEX, run_meta_key

pytestmark = pytest.mark.redis

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runlog-v1-completed.jsonl"
RUN = "fixture-completed"


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    data = tmp_path / "data"
    archived = archive_path(data / "runs", RUN)
    archived.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, archived)
    return {**os.environ, "REDIS_URL": redis_url, "CONTREACT_DATA_DIR": str(data)}


@pytest.mark.parametrize("args", [["show", RUN], ["show", RUN, "--json"]], ids=["text", "json"])
def test_a_reader_gone_before_the_first_line_ends_it_quietly(
    args: list[str], env: dict[str, str]
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "contreact_cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the command has printed anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def test_runs_piped_into_head_prints_one_line_and_ends_quietly(
    redis_url: str, env: dict[str, str], tmp_path: Path
) -> None:
    client = redis.Redis.from_url(redis_url)
    with client.pipeline(transaction=False) as pipe:
        for n in range(5000):  # far more output than a pipe holds
            run_id = f"run-{n:05d}"
            pipe.zadd(RUNS_INDEX, {run_id: n})
            pipe.hset(run_meta_key(run_id), mapping={"run_id": run_id, "status": "completed"})
        pipe.execute()
    client.close()
    script = f'"{sys.executable}" -m contreact_cli runs | head -1; echo "exit ${{PIPESTATUS[0]}}"'
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.splitlines()[0].startswith("run-00000 ")
    assert done.stdout.splitlines()[1:] == ["exit 141"], done.stdout
    assert done.stderr == ""
