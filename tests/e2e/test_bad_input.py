"""Bad input through the real CLI: one line naming the problem and the fix, a
non-zero exit, no traceback. Ollama is the stand-in server on a real socket."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.fake_ollama import closed_port_host, running_fake_ollama
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e]


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("contreact: error: ")
    for needle in needles:
        assert needle in line, line


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTREACT_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-m", "contreact_cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def config_file(tmp_path: Path, **data: object) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump({"run_id": "bad-1", "model_name": "m", "cycle_count": 1, **data})
    )
    return path


def test_missing_config_file(tmp_path: Path) -> None:
    one_line_error(cli(tmp_path, "run", "nowhere.yaml"), 2, "config file not found", "nowhere")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"cycle_count": None}, "'cycle_count'"),
        ({"cycle_count": "many"}, "'cycle_count' input should be a valid integer"),
        ({"cycle_count": 0}, "'cycle_count' input should be greater than 0"),
        ({"cycle_count": -2}, "greater than 0"),
        ({"model_options": {"temprature": 0.5}}, "unknown key 'model_options.temprature'"),
    ],
)
def test_config_mistakes(tmp_path: Path, data: dict[str, object], needle: str) -> None:
    one_line_error(cli(tmp_path, "run", str(config_file(tmp_path, **data))), 2, needle)


def test_a_missing_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("run_id: x\ncycle_count: 3\n")
    one_line_error(cli(tmp_path, "run", str(path)), 2, "missing required key 'model_name'")


@pytest.mark.redis
def test_a_model_that_is_not_pulled_fails_the_run_with_the_pull_command(
    stack: Stack, tmp_path: Path
) -> None:
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        path = config_file(
            tmp_path,
            backend="ollama",
            model_name="qwen3:4b",
            ollama_client_config={"host": fake.host},
        )
        proc = stack.cli("run", str(path))
    one_line_error(proc, 1, "qwen3:4b", "`ollama pull qwen3:4b`", fake.host)


@pytest.mark.redis
def test_an_unreachable_ollama_host_is_named(stack: Stack, tmp_path: Path) -> None:
    host = closed_port_host()
    path = config_file(
        tmp_path, run_id="bad-unreachable", backend="ollama", ollama_client_config={"host": host}
    )
    one_line_error(stack.cli("run", str(path)), 1, host)


@pytest.mark.redis
def test_an_ollama_run_through_every_service(stack: Stack, tmp_path: Path) -> None:
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        fake.reply("", [("write", {"key": "first", "value": "a thought"})])
        fake.reply("I wrote my first thought down.")
        path = config_file(
            tmp_path,
            run_id="bad-ollama",
            backend="auto",
            model_name="llama3",
            ollama_client_config={"host": fake.host},
            model_options={"seed": 3, "num_ctx": 2048},
            keep_alive="10m",
        )
        proc = stack.cli("run", str(path))
        chats = fake.chat_requests()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backend: ollama" in proc.stdout
    assert len(chats) == 2
    assert chats[0]["options"] == {"seed": 3, "num_ctx": 2048}
    assert chats[0]["keep_alive"] == "10m"
    assert chats[1]["messages"][-1] == {
        "role": "tool",
        "content": "Saved under key 'first'.",
        "tool_name": "write",
    }
    show = stack.json("show", "bad-ollama")
    assert show["reflection_history"] == ["I wrote my first thought down."]
    assert show["cycle_metrics"][0]["prompt_tokens"] == 20
