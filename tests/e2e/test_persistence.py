"""The Redis that `contreact up` starts keeps an append-only file: after `down` and
`up` again, the runs are still in Redis (not only in the archive)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.stack_env import stack_environment

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_runs_survive_a_redis_restart(tmp_path: Path) -> None:
    env = stack_environment(tmp_path / "data")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "contreact_cli", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run_id": "persist-1",
                "model_name": "m",
                "cycle_count": 2,
                "backend": "scripted",
                "diversity": {"enabled": False},
                "script": {"replies": [{"content": "a note for the next cycle"}], "repeat": True},
            }
        )
    )
    try:
        up = cli("up")
        assert up.returncode == 0, up.stdout + up.stderr
        assert "append-only file in" in up.stdout
        run = cli("run", str(config))
        assert run.returncode == 0, run.stdout + run.stderr
        down = cli("down")
        assert "redis: stopped" in down.stdout
        (tmp_path / "data" / "runs" / "persist-1.events.jsonl").unlink()  # Redis alone now
        again = cli("up")
        assert again.returncode == 0, again.stdout + again.stderr
        runs = json.loads(cli("runs", "--json").stdout)
        assert [(r["run_id"], r["status"]) for r in runs] == [("persist-1", "completed")]
        replay = json.loads(cli("replay", "persist-1", "--check", "--json").stdout)
        assert replay["divergence"] is None and replay["events"] > 10
    finally:
        cli("down")
